# shellcheck shell=bash
# A private dockerd beside the first engine: the code second-engine.sh and
# gvisor-engine.sh share. Sourced, not run. Such an engine has its own
# --config-file (so it does not read /etc/docker/daemon.json, whose data-root
# would clash with --data-root), data root, exec root, pidfile, socket(s),
# log, lock and containerd namespace; its containerd is the one dockerd
# manages itself, under the exec root. Storage driver: fuse-overlayfs, like the
# first engine. No bridge, no iptables. The first engine is only read from
# (images); its configuration is never touched.
#
# A script using it:
#   . "$HERE/lib/dockerd.sh"
#   engine_setup NAME PREFIX LABEL   # e.g. sbx-engine2 second-engine "second engine"
#   ... adjust the settings below, define print_env and any hook ...
#   engine_main "$@"                 # start|stop|env, else usage and exit 2
#
# Settings (engine_setup gives the defaults; set them after it):
#   DOCKERD_ARGS       extra dockerd arguments after -H "$SOCK" (none)
#   CONFIG_EXTRA       lines added to daemon.json after the common keys (none)
#   LEFTOVER_RUNTIMES  runtimes whose leftover containers are killed (runc)
#   LEFTOVER_HELPERS   regex of process names of ours to kill after the
#                      shims (^fuse-overlayfs$)
#   UP_WHERE           where the engine listens, for the "up:" line ($SOCK)
# Functions the script defines:
#   print_env          the NAME=VALUE lines `start` and `env` print on stdout
#   engine_preflight   optional: run by `start` after the root check
#   engine_check_up    optional: run once the engine answers on $SOCK
#   engine_ready       optional: run after the engine is up, before images
#
# Functions (progress and errors go to stderr, exit code 125 on failure):
#   say MSG / die MSG  a "PREFIX: MSG" line; die then exits 125
#   our_docker ARGS    the docker CLI pointed at our socket
#   answers HOST       the engine at HOST answers within 10 s
#   mentions_us PID    its command line names our exec or data root
#   our_procs REGEX    pids whose name matches REGEX and that mention us
#   daemon_pid         the pid of our live dockerd, if any
#   kill_and_wait S PID...  SIGTERM, S seconds, then SIGKILL
#   cleanup_leftovers  what a dead dockerd of ours left: containers, shims,
#                      containerd, mounts, pidfile, socket
#   write_config       writes our daemon.json
#   launch             starts dockerd detached (setsid, no fd of ours)
#   wait_up            waits for it to answer (START_TIMEOUT s), else exit
#   sync_images        copies IMAGES from the first engine when they differ
#   stop_engine        kills our containers, stops dockerd, cleans up
#   take_lock          an flock on $LOCK (fd 9), held until the script exits
#   cmd_start / cmd_stop  `start` / `stop`, under an flock on $LOCK

engine_setup() { # engine_setup NAME PREFIX LABEL
  NAME=$1
  SAY_PREFIX=$2
  LABEL=$3
  DOCKER=${SBX_DOCKER:-docker}
  CONF_DIR=/etc/$NAME
  CONF=$CONF_DIR/daemon.json
  DATA_ROOT=/var/lib/$NAME
  EXEC_ROOT=/run/$NAME
  PIDFILE=/run/$NAME.pid
  SOCK_PATH=/run/$NAME.sock
  SOCK=unix://$SOCK_PATH
  LOG=/var/log/$NAME.log
  LOCK=/run/$NAME.lock
  IMAGES=(sbx-busybox:latest sbx-python:bookworm)
  START_TIMEOUT=60
  STOP_TIMEOUT=20
  SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  DOCKERD_ARGS=()
  CONFIG_EXTRA=
  LEFTOVER_RUNTIMES=(runc)
  LEFTOVER_HELPERS='^fuse-overlayfs$'
  UP_WHERE=$SOCK
}

# Hooks: no-ops unless the script redefines them after sourcing this file.
engine_preflight() { :; }
engine_check_up() { :; }
engine_ready() { :; }

say() { echo "$SAY_PREFIX: $*" >&2; }
die() {
  say "$*"
  exit 125
}

our_docker() { "$DOCKER" -H "$SOCK" "$@"; }

answers() { # answers HOST: the engine at HOST answers within 10 s
  timeout 10 "$DOCKER" -H "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

mentions_us() { # mentions_us PID: its command line names our exec or data root
  local args
  mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
  case " ${args[*]} " in
    *"$EXEC_ROOT"* | *"$DATA_ROOT"*) return 0 ;;
    *) return 1 ;;
  esac
}

our_procs() { # our_procs REGEX: pids whose name matches REGEX and that mention_us
  local dir comm
  for dir in /proc/[0-9]*; do
    read -r comm 2>/dev/null <"$dir/comm" || continue
    [[ $comm =~ $1 ]] && mentions_us "${dir#/proc/}" && echo "${dir#/proc/}"
  done
  return 0
}

daemon_pid() { # the pid of our live dockerd, if any
  local pid=""
  if [ -s "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && mentions_us "$pid"; then
      echo "$pid"
      return 0
    fi
  fi
  our_procs '^dockerd$' | head -n 1
}

alive() { kill -0 "$1" 2>/dev/null; }

kill_and_wait() { # kill_and_wait SECONDS PID...: SIGTERM, wait, then SIGKILL
  local secs=$1 pid left
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 1 $((secs * 5))); do
    left=0
    for pid in "$@"; do alive "$pid" && left=1; done
    [ "$left" = 0 ] && return 0
    sleep 0.2
  done
  for pid in "$@"; do
    if alive "$pid"; then
      say "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) ignored SIGTERM for $secs s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sleep 0.2
}

# Removes what a dead dockerd of ours left behind: containers still running
# under its runtime roots, containerd shims, its containerd, fuse-overlayfs
# (and LEFTOVER_HELPERS) processes and netns mounts under our roots, the
# pidfile and the socket. Only processes whose command line names our roots,
# and mounts under them, are touched.
cleanup_leftovers() {
  local root id pids mnt rt
  for rt in "${LEFTOVER_RUNTIMES[@]}"; do
    command -v "$rt" >/dev/null 2>&1 || continue
    for root in "$EXEC_ROOT/runtime-$rt"/*; do
      [ -d "$root" ] || continue
      for id in $("$rt" --root "$root" list -q 2>/dev/null); do
        say "killing leftover $rt container ${id:0:12}"
        "$rt" --root "$root" kill "$id" KILL 2>/dev/null || true
        "$rt" --root "$root" delete --force "$id" 2>/dev/null || true
      done
    done
  done
  # shims of dead containers wait for a containerd that will not come back
  # and ignore SIGTERM: 1 s, then SIGKILL
  mapfile -t pids < <(our_procs '^containerd-shim')
  [ ${#pids[@]} = 0 ] || say "killing leftover containerd shims: ${pids[*]}"
  kill_and_wait 1 "${pids[@]}"
  mapfile -t pids < <(our_procs '^containerd$')
  [ ${#pids[@]} = 0 ] || say "stopping leftover containerd: ${pids[*]}"
  kill_and_wait 10 "${pids[@]}"
  # container rootfs (fuse-overlayfs), netns and shm mounts, deepest first
  # (mount points are octal-escaped in /proc/mounts; ours have no spaces)
  while read -r mnt; do
    say "unmounting leftover $mnt"
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  done < <(awk -v a="$DATA_ROOT/" -v b="$EXEC_ROOT/" \
    'index($2, a) == 1 || index($2, b) == 1 { print $2 }' /proc/mounts | sort -r)
  mapfile -t pids < <(our_procs "$LEFTOVER_HELPERS")
  kill_and_wait 2 "${pids[@]}"
  # dockerd bind-mounts its data root onto itself and leaves this marker;
  # it unmounts it on a clean shutdown only
  if [ -e "$EXEC_ROOT/unmount-on-shutdown" ]; then
    if awk -v d="$DATA_ROOT" '$2 == d { found = 1 } END { exit !found }' /proc/mounts; then
      umount "$DATA_ROOT" 2>/dev/null || umount -l "$DATA_ROOT" 2>/dev/null || true
    fi
    rm -f "$EXEC_ROOT/unmount-on-shutdown"
  fi
  rm -f "$PIDFILE" "$SOCK_PATH"
}

write_config() {
  mkdir -p "$CONF_DIR"
  # Paths live on the command line (visible in ps, which stop relies on);
  # a key given both as a flag and here would make dockerd refuse to start.
  # CONFIG_EXTRA, if any, follows the last common key after a comma.
  cat >"$CONF.tmp" <<EOF
{
  "storage-driver": "fuse-overlayfs",
  "log-driver": "json-file",
  "log-opts": {"max-size": "10m", "max-file": "3"}${CONFIG_EXTRA:+,
$CONFIG_EXTRA}
}
EOF
  mv -f "$CONF.tmp" "$CONF"
}

launch() {
  write_config
  mkdir -p "$DATA_ROOT" "$EXEC_ROOT"
  [ -f "$LOG" ] && mv -f "$LOG" "$LOG.1"
  say "starting dockerd (log: $LOG)"
  # setsid + nohup: outlives the caller's session. It inherits no fd of ours
  # but 0-2 (/dev/null, the log): not the lock (9), nor a pipe a caller such
  # as `$(second-engine.sh start)` or a CI runner waits on to close.
  (
    for fd in "/proc/$BASHPID"/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec setsid nohup dockerd \
      --config-file "$CONF" \
      --data-root "$DATA_ROOT" \
      --exec-root "$EXEC_ROOT" \
      --pidfile "$PIDFILE" \
      --containerd-namespace "$NAME" \
      --containerd-plugins-namespace "$NAME-plugins" \
      --bridge none \
      --iptables=false \
      --ip6tables=false \
      -H "$SOCK" \
      "${DOCKERD_ARGS[@]}"
  ) </dev/null >"$LOG" 2>&1 &
}

wait_up() {
  local started=$SECONDS
  until answers "$SOCK"; do
    if [ $((SECONDS - started)) -ge "$START_TIMEOUT" ]; then
      say "the $LABEL did not answer within $START_TIMEOUT s; tail of $LOG:"
      tail -n 30 "$LOG" >&2 || true
      stop_engine
      exit 125
    fi
    # (its pid is in the process table at once; give it 2 s anyway)
    if [ -z "$(daemon_pid)" ] && [ $((SECONDS - started)) -ge 2 ]; then
      say "dockerd exited; tail of $LOG:"
      tail -n 30 "$LOG" >&2 || true
      cleanup_leftovers
      exit 125
    fi
    sleep 0.2
  done
  engine_check_up
  if [ ! -S "$EXEC_ROOT/containerd/containerd.sock" ]; then
    say "warning: no $EXEC_ROOT/containerd/containerd.sock: dockerd may be using a system containerd shared with the first engine"
  fi
}

image_id() { # image_id HOST IMAGE
  "$DOCKER" -H "$1" image inspect --format '{{.Id}}' "$2" 2>/dev/null || true
}

sync_images() {
  local image id1 id2
  # the first engine is whatever the plain CLI reaches (DOCKER_HOST, context)
  for image in "${IMAGES[@]}"; do
    if ! "$DOCKER" image inspect "$image" >/dev/null 2>&1; then
      say "$image missing on the first engine: running build-images.sh"
      "$SCRIPTS_DIR/build-images.sh" >&2
      break
    fi
  done
  for image in "${IMAGES[@]}"; do
    id1=$("$DOCKER" image inspect --format '{{.Id}}' "$image")
    id2=$(image_id "$SOCK" "$image")
    if [ "$id1" = "$id2" ]; then
      continue
    fi
    say "copying $image (${id1:7:12}) to the $LABEL"
    "$DOCKER" save "$image" | our_docker load >&2
    id2=$(image_id "$SOCK" "$image")
    [ "$id1" = "$id2" ] || die "$image: id ${id2:-none} on the $LABEL after load, ${id1} on the first"
  done
}

take_lock() { # an flock on $LOCK (fd 9) for the rest of the script
  exec 9>"$LOCK"
  flock -w 180 9 || die "could not take $LOCK within 180 s"
}

cmd_start() {
  [ "$(id -u)" = 0 ] || die "start must run as root"
  engine_preflight
  command -v dockerd >/dev/null 2>&1 || die "dockerd not found: run scripts/ensure-engine.sh first"
  "$DOCKER" info >/dev/null 2>&1 || die "the first engine does not answer (\`$DOCKER info\`): run scripts/ensure-engine.sh first"
  take_lock
  if answers "$SOCK"; then
    wait_up
  else
    if [ -n "$(daemon_pid)" ]; then
      say "dockerd $(daemon_pid) is running but does not answer yet: waiting"
    else
      if [ -e "$PIDFILE" ] || [ -S "$SOCK_PATH" ] || [ -n "$(our_procs '^containerd')" ]; then
        say "no live dockerd but leftovers of one: cleaning up"
      fi
      cleanup_leftovers
      launch
    fi
    wait_up
    say "up: $UP_WHERE"
  fi
  engine_ready
  sync_images
  print_env
}

stop_engine() { # (with the lock held)
  local pid running
  pid=$(daemon_pid)
  if [ -n "$pid" ]; then
    # dockerd would SIGTERM each running container and wait 10 s before
    # SIGKILL (they die either way, there is no live-restore): kill them now
    running=$(timeout 3 "$DOCKER" -H "$SOCK" ps -q 2>/dev/null || true)
    if [ -n "$running" ]; then
      say "killing $(echo "$running" | wc -l) running container(s)"
      # shellcheck disable=SC2086 # one id a word
      timeout 10 "$DOCKER" -H "$SOCK" kill $running >/dev/null 2>&1 || true
    fi
    say "stopping dockerd $pid"
    kill_and_wait "$STOP_TIMEOUT" "$pid"
  fi
  cleanup_leftovers
}

cmd_stop() {
  [ "$(id -u)" = 0 ] || die "stop must run as root"
  take_lock
  stop_engine
}

engine_main() { # engine_main ARGS: the command line of the script
  case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) print_env ;;
    *)
      echo "usage: $0 start|stop|env" >&2
      exit 2
      ;;
  esac
}

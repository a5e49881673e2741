#!/bin/sh
# Fake docker CLI for sbx's tests: logs its argv, then plays the engine.
dir='@DIR@'
[ "$1" = __probe ] && exit 0
# FAKE_FAIL_ALL: a CLI that fails every command (an engine that never answers).
if [ -n "$FAKE_FAIL_ALL" ]; then
  echo 'Cannot connect to the Docker daemon at unix:///x. Is the docker daemon running?' >&2
  exit 1
fi
sep=$(printf '\037')
line=
n=0
for a in "$@"; do
  if [ "$n" -eq 0 ]; then line=$a; else line=$line$sep$a; fi
  n=$((n + 1))
done
printf '%s\n' "$line" >> "$dir/log"
bad() {
  echo "fake docker: $*" >&2
  exit 99
}
daemon_down() {
  if [ "$FAKE_DAEMON" = down ]; then
    echo 'Cannot connect to the Docker daemon at unix:///x. Is the docker daemon running?' >&2
    exit 1
  fi
}
# emit RUN NAME ACTION [EXIT CODE]: an engine event, for the event stream
# of run RUN (`events`), in docker's `{{json .}}` shape.
emit() {
  printf '{"Type":"container","Action":"%s","status":"%s","Actor":{"ID":"f4ce","Attributes":{"name":"%s","exitCode":"%s","sbx.run":"%s"}}}\n' \
    "$3" "$3" "$2" "$4" "$1" >> "$dir/events-$1"
}
# die RUN NAME: the engine's `die` of a started container, once: from the
# watcher when the program ends, or from `rm -f` if that comes first. This
# fake keeps no exit code, so it records every code (the program's
# included), unless FAKE_DIE=none plays an engine that never saw the
# program end (a cut connection).
die() {
  [ "$FAKE_DIE" = none ] && return
  [ -e "$dir/c-$2.started" ] || return
  if ! mkdir "$dir/died-$2" 2>/dev/null; then
    # The other one is writing it: like the engine, `die` before `destroy`.
    i=0
    while [ ! -e "$dir/died-$2/done" ] && [ "$i" -lt 250 ]; do
      sleep 0.02
      i=$((i + 1))
    done
    return
  fi
  for c in $(seq 0 255); do
    printf '{"Type":"container","Action":"die","Actor":{"Attributes":{"name":"%s","exitCode":"%s"}}}\n' "$2" "$c"
  done > "$dir/die-$2"
  cat "$dir/die-$2" >> "$dir/events-$1"
  : > "$dir/died-$2/done"
}
# FAKE_HELPER=1: the client starts a helper of its own (as the CLI starts
# buildx, or ssh for an ssh:// engine), which lives on unless its whole
# process group is killed; its pid goes to `helper.pid`.
helper() {
  if [ "$FAKE_HELPER" = 1 ]; then
    sleep 30 </dev/null >/dev/null 2>&1 &
    echo $! > "$dir/helper.pid.tmp" && mv "$dir/helper.pid.tmp" "$dir/helper.pid"
  fi
}
image_missing() {
  [ "$FAKE_IMAGE" = missing ] && [ ! -e "$dir/pulled" ]
}
# The engine this call is for: `--host URL` / `--context NAME`, or `default`.
engine=default
case "$1" in
  --host|--context) engine=$2; shift 2 ;;
esac
# FAKE_DEAD_ENGINE: that engine accepts creates, dies during every start,
# and answers nothing after.
dead() {
  if [ "$FAKE_DEAD_ENGINE" = "$engine" ]; then
    echo "error during connect: Get \"http://$engine/v1.41/version\": EOF" >&2
    exit 1
  fi
}
case "$1" in
version)
  daemon_down
  dead
  # FAKE_ARCH: the engine's architecture (`--format {{.Server.Arch}}`).
  case "$*" in
    *Server.Arch*) echo "${FAKE_ARCH:-fake}" ;;
    *) echo 20.10.fake ;;
  esac
  exit 0 ;;
context)
  echo unix:///var/run/docker.sock
  exit 0 ;;
image)
  daemon_down
  # FAKE_IMAGES: the lines `image ls --format` prints.
  if [ "$2" = ls ]; then
    [ -n "$FAKE_IMAGES" ] && printf '%s\n' "$FAKE_IMAGES"
    exit 0
  fi
  if image_missing || [ "$FAKE_NO_IMAGE_ENGINE" = "$engine" ]; then
    echo 'Error response from daemon: No such image: x' >&2
    exit 1
  fi
  echo sha256:fake
  exit 0 ;;
pull)
  if [ -n "$FAKE_PULL_SLEEP" ]; then
    helper
    echo $$ > "$dir/pull.pid.tmp" && mv "$dir/pull.pid.tmp" "$dir/pull.pid"
    exec sleep "$FAKE_PULL_SLEEP"
  fi
  if [ "$FAKE_PULL" = fail ]; then
    echo 'Error response from daemon: pull access denied for x' >&2
    exit 1
  fi
  : > "$dir/pulled"
  exit 0 ;;
create)
  # create FLAGS... -- IMAGE [INTERP...] /work/task
  if [ -n "$FAKE_CREATE_SLEEP" ]; then
    : > "$dir/create.started"
    sleep "$FAKE_CREATE_SLEEP"
  fi
  daemon_down
  shift
  name= vol= prev= interactive= run=
  while [ $# -gt 0 ]; do
    a=$1
    shift
    [ "$a" = -- ] && break
    [ "$a" = -i ] && interactive=1
    case $prev in
      --name) name=$a ;;
      -v) vol=$a ;;
      --label) run=${a#sbx.run=} ;;
    esac
    prev=$a
  done
  [ $# -ge 2 ] || bad "create without IMAGE /work/task"
  image=$1
  shift
  if image_missing; then
    echo "Error response from daemon: No such image: $image" >&2
    exit 1
  fi
  interp=
  while [ $# -gt 1 ]; do
    interp=$interp$1'
'
    shift
  done
  [ "$1" = /work/task ] || bad "create does not end with /work/task: $1"
  [ -n "$name" ] || bad "create without --name"
  case $vol in
    *:/work/task:ro) ;;
    *) bad "create without -v SRC:/work/task:ro" ;;
  esac
  rm -f "$dir/c-$name.i" "$dir/c-$name.removed"
  [ -n "$interactive" ] && : > "$dir/c-$name.i"
  printf '%s' "$interp" > "$dir/c-$name.interp"
  printf '%s' "${vol%:/work/task:ro}" > "$dir/c-$name.tmp"
  mv "$dir/c-$name.tmp" "$dir/c-$name.staged"
  printf '%s' "$run" > "$dir/c-$name.run"
  emit "$run" "$name" create
  echo "f4ce$$"
  exit 0 ;;
start)
  # start -a [-i] -- NAME
  shift
  attach= interactive= name=
  while [ $# -gt 0 ]; do
    a=$1
    shift
    case $a in
      -a) attach=1 ;;
      -i) interactive=1 ;;
      --) name=$1; shift; break ;;
      *) bad "unexpected start argument: $a" ;;
    esac
  done
  [ -n "$attach" ] || bad "start without -a"
  [ -n "$name" ] && [ $# -eq 0 ] || bad "start takes exactly one NAME after --"
  if [ ! -e "$dir/c-$name.staged" ]; then
    echo "Error response from daemon: No such container: $name" >&2
    exit 1
  fi
  if [ -n "$FAKE_START_FAIL" ]; then
    printf '%s\n' "$FAKE_START_FAIL" >&2
    exit 1
  fi
  if [ "$FAKE_DEAD_ENGINE" = "$engine" ]; then
    printf '%s\n' "$engine" >> "$dir/died-on"
    echo 'error during connect: unexpected EOF' >&2
    exit 1
  fi
  printf '%s %s\n' "$engine" "$name" >> "$dir/ran-on"
  # Like docker: without -i on both create and start, the program's stdin is empty.
  if [ -z "$interactive" ] || [ ! -e "$dir/c-$name.i" ]; then exec </dev/null; fi
  staged=$(cat "$dir/c-$name.staged")
  # The engine's `start` event: the program was started.
  run=$(cat "$dir/c-$name.run")
  emit "$run" "$name" start
  # FAKE_OOM=1: the memory cap was hit; =neighbour: only a container whose
  # name starts with ours (sbx must match exact names).
  case $FAKE_OOM in
    1) emit "$run" "$name" oom ;;
    neighbour)
      emit "$run" "${name}0" create
      emit "$run" "${name}0" oom ;;
  esac
  : > "$dir/c-$name.started"
  helper
  pid=$$
  (
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    die "$run" "$name"
    # `--rm`: the engine removes the container once it ended.
    emit "$run" "$name" destroy
  ) </dev/null >/dev/null 2>&1 &
  echo $$ > "$dir/pid-$name.tmp" && mv "$dir/pid-$name.tmp" "$dir/pid-$name"
  exec /bin/sh "$staged" ;;
rm)
  # rm -f -- NAME...
  dead
  [ "$2" = -f ] && [ "$3" = -- ] || bad "rm without -f --"
  shift 3
  # FAKE_RM_FAIL_FOR=S: every rm fails, as an engine struggling to kill a
  # container does, until S seconds after the first one.
  if [ -n "$FAKE_RM_FAIL_FOR" ]; then
    [ -e "$dir/rm-first" ] || date +%s > "$dir/rm-first"
    if [ "$(date +%s)" -lt $(($(cat "$dir/rm-first") + FAKE_RM_FAIL_FOR)) ]; then
      echo "Error response from daemon: Could not kill running container $1, cannot remove - tried to kill container, but did not receive an exit event" >&2
      exit 1
    fi
  fi
  for name in "$@"; do
    if [ -e "$dir/c-$name.staged" ]; then
      mv "$dir/c-$name.staged" "$dir/c-$name.removed"
      printf '%s\n' "$name" >> "$dir/removed"
      run=$(cat "$dir/c-$name.run")
      die "$run" "$name"
      emit "$run" "$name" destroy
    fi
  done
  exit 0 ;;
events)
  # events --since S --filter label=sbx.run=RUN --filter type=container
  # --format '{{json .}}': every event of the run so far, then as they come.
  daemon_down
  run=
  for a in "$@"; do
    case $a in
      label=sbx.run=*) run=${a#label=sbx.run=} ;;
    esac
  done
  [ -n "$run" ] || bad "events without a run label filter"
  printf '%s\n' "$$" >> "$dir/events.pids"
  if [ "$FAKE_EVENTS" = cut ]; then
    # The stream ends after the first event of the run.
    touch "$dir/events-$run"
    while [ ! -s "$dir/events-$run" ]; do sleep 0.05; done
    echo 'Error response from daemon: stream cut' >&2
    exit 1
  fi
  if [ "$FAKE_DEAD_ENGINE" = "$engine" ]; then
    # Its connection is cut when the engine dies during a start.
    while [ ! -e "$dir/died-on" ]; do sleep 0.05; done
    echo "error during connect: Get \"http://$engine/v1.41/events\": EOF" >&2
    exit 1
  fi
  touch "$dir/events-$run"
  exec tail -n +1 -f "$dir/events-$run" ;;
ps)
  dead
  # ps -a -q --filter name=^/NAME$: the container's id while it exists.
  if [ "$2" = -a ] && [ "$3" = -q ] && [ "$4" = --filter ]; then
    name=${5#name=^/}
    name=${name%\$}
    [ -e "$dir/c-$name.staged" ] && echo f4ce
    exit 0
  fi
  # FAKE_PS: the lines `ps --format` prints (leftovers to list).
  [ -n "$FAKE_PS" ] && printf '%s\n' "$FAKE_PS"
  exit 0 ;;
info)
  # `info --format`: cgroup|default runtime|driver|kernel|runtimes.
  # FAKE_RUNTIMES: the runtimes the engine knows (default: runc).
  daemon_down
  dead
  echo "2|runc|overlay2|6.1.0-fake|${FAKE_RUNTIMES:-runc} "
  exit 0 ;;
volume)
  # Build volumes of compiled candidates: none listed, any removed.
  daemon_down
  dead
  exit 0 ;;
*)
  bad "unexpected command: $1" ;;
esac

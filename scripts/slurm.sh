#!/usr/bin/env bash
# A one-node Slurm cluster on 127.0.0.1, and a real array job of
# `sbx eval --partition` shares merged with `sbx merge`. Run as root.
#
#   slurm.sh install   idempotent: apt-get install slurmctld slurmd
#                      slurm-client munge (Debian's), unless present
#   slurm.sh start     idempotent: install, a munge key and munged, this
#                      cluster's slurm.conf (its own folder, ports 16817/8),
#                      slurmctld and slurmd; waits until the node is idle
#   slurm.sh stop      idempotent: cancels the cluster's jobs, stops slurmd,
#                      slurmctld and the munged it started (SIGTERM, 20 s,
#                      SIGKILL)
#   slurm.sh check     start, then a HumanEval-format run judged once whole
#                      and once as an array of 4 shares (sbatch --array=0-3,
#                      K = SLURM_ARRAY_TASK_ID + 1), merged: the merged
#                      results file must equal the single run's byte for
#                      byte, and merge's exit code eval's; then stop
#
# Environment: SBX (the sbx binary; default the debug build), SBX_SLURM_PORT
# (slurmctld's port on 127.0.0.1, default 16817; slurmd's is the next). The
# engine is the local one: each array task runs on this node. Nothing
# listens beyond 127.0.0.1.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SBX=${SBX:-$ROOT/target/x86_64-unknown-linux-gnu/debug/sbx}
PORT=${SBX_SLURM_PORT:-16817}
NAME=sbx-slurm
CONF_DIR=/etc/$NAME
export SLURM_CONF=$CONF_DIR/slurm.conf
STATE=/var/lib/$NAME
RUN=/run/$NAME
LOG=/var/log/$NAME
NODE=$(hostname -s)
STOP_TIMEOUT=20

say() { echo "slurm: $*" >&2; }
die() {
  say "$*"
  exit 2
}

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
    command -v sbatch >/dev/null && command -v munged >/dev/null; then
    return
  fi
  say "installing slurmctld slurmd slurm-client munge"
  # A fresh machine may have no package lists yet: update once, then retry.
  local packages="slurmctld slurmd slurm-client munge"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages >&2 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages >&2; }
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

write_conf() {
  mkdir -p "$CONF_DIR" "$STATE/ctld" "$STATE/d" "$RUN" "$LOG"
  local cpus
  cpus=$(nproc)
  cat >"$SLURM_CONF.new" <<EOF
ClusterName=sbx
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=sbx Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$SLURM_CONF.new" "$SLURM_CONF"
  # Empty cgroup.conf: slurmd reads it even when no cgroup plugin is used.
  : >"$CONF_DIR/cgroup.conf"
}

start() {
  install
  if ! munge -n </dev/null >/dev/null 2>&1; then
    if [ ! -s /etc/munge/munge.key ]; then
      mungekey --create --keyfile=/etc/munge/munge.key
      chown munge:munge /etc/munge/munge.key 2>/dev/null || true
      chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge
    chown munge:munge /run/munge 2>/dev/null || true
    say "starting munged"
    if id munge >/dev/null 2>&1; then
      runuser -u munge -- munged
    else
      munged --force
    fi
    touch "$RUN.munged-ours" 2>/dev/null || true
  fi
  write_conf
  if ! alive "$RUN/slurmctld.pid"; then
    say "starting slurmctld on 127.0.0.1:$PORT"
    slurmctld -f "$SLURM_CONF"
  fi
  if ! alive "$RUN/slurmd.pid"; then
    say "starting slurmd ($NODE)"
    slurmd -f "$SLURM_CONF"
  fi
  local deadline=$((SECONDS + 60))
  until sinfo -h -o '%T' 2>/dev/null | grep -qx 'idle'; do
    if [ $SECONDS -ge $deadline ]; then
      sinfo >&2 || true
      tail -5 "$LOG/slurmctld.log" "$LOG/slurmd.log" >&2 || true
      die "the node did not become idle within 60 s"
    fi
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  say "cluster up: $(sinfo -h -o '%P %D %T')"
}

stop_pidfile() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

stop() {
  if [ -f "$SLURM_CONF" ]; then
    scancel --full --quiet --user=root 2>/dev/null || true
  fi
  stop_pidfile "$RUN/slurmd.pid"
  stop_pidfile "$RUN/slurmctld.pid"
  if [ -f "$RUN.munged-ours" ]; then
    stop_pidfile /run/munge/munged.pid
    rm -f "$RUN.munged-ours"
  fi
  say "cluster stopped"
}

# A HumanEval-format suite: three problems (one without samples), twelve
# sample lines, some failing.
fixture() {
  local dir=$1
  cat >"$dir/problems.jsonl" <<'EOF'
{"task_id": "T/0", "prompt": "def add(a, b):\n", "entry_point": "add", "test": "def check(f):\n    assert f(2, 3) == 5\n"}
{"task_id": "T/1", "prompt": "def mul(a, b):\n", "entry_point": "mul", "test": "def check(f):\n    assert f(2, 3) == 6\n"}
{"task_id": "T/2", "prompt": "def sub(a, b):\n", "entry_point": "sub", "test": "def check(f):\n    assert f(2, 3) == -1\n"}
EOF
  local line code
  : >"$dir/samples.jsonl"
  for line in "T/0|a + b" "T/1|a * b" "T/0|a - b" "T/0|a + b" "T/1|a + b + 1" "T/1|1 / 0" \
    "T/0|b + a" "T/1|a * b" "T/0|a * b" "T/1|b * a" "T/0|a + b + 0" "T/1|a ** 1 * b"; do
    code=${line#*|}
    printf '{"task_id": "%s", "completion": "    return %s\\n"}\n' "${line%%|*}" "$code" >>"$dir/samples.jsonl"
  done
}

check() {
  [ -x "$SBX" ] || die "no sbx binary at $SBX (cargo build, or set SBX)"
  start
  trap stop EXIT
  local dir
  dir=$(mktemp -d /tmp/sbx-slurm.XXXXXX)
  fixture "$dir"
  local opts=(--problems problems.jsonl --samples samples.jsonl --image sbx-python:bookworm
    --pull never --timeout 30 --format json -j 2)
  local started=$SECONDS single=0
  (cd "$dir" && "$SBX" eval "${opts[@]}" >single.json) || single=$?
  say "single run: exit $single in $((SECONDS - started)) s"
  started=$SECONDS
  cat >"$dir/share.sh" <<EOF
#!/bin/sh
cd "$dir" || exit 2
"$SBX" doctor --image sbx-python:bookworm --pull never --allow-skips >/dev/null 2>&1 || { echo "node check failed" >&2; exit 2; }
"$SBX" eval ${opts[*]} --partition "hash:\$((SLURM_ARRAY_TASK_ID + 1))/4" >"share-\$SLURM_ARRAY_TASK_ID.json"
[ \$? -le 1 ]
EOF
  chmod +x "$dir/share.sh"
  sbatch --wait --array=0-3 --output="$dir/slurm-%A_%a.out" --chdir="$dir" "$dir/share.sh" >&2 ||
    die "the array job failed: $(cat "$dir"/slurm-*.out)"
  say "array of 4 shares: $((SECONDS - started)) s"
  local merged=0
  (cd "$dir" && "$SBX" merge share-0.json share-1.json share-2.json share-3.json \
    --format json >merged.json) || merged=$?
  [ "$merged" -eq "$single" ] || die "merge exited $merged, the single run $single"
  (cd "$dir" && "$SBX" merge samples.jsonl_results.hash-{1,2,3,4}-of-4.jsonl \
    -o merged_results.jsonl >/dev/null) || true
  cmp "$dir/merged_results.jsonl" "$dir/samples.jsonl_results.jsonl" ||
    die "the merged results file differs from the single run's ($dir)"
  say "merged = single run (results file byte for byte, exit $merged)"
  rm -rf "$dir"
}

case ${1:-} in
  install) install ;;
  start) start ;;
  stop) stop ;;
  check) check ;;
  *)
    echo "usage: $0 install|start|stop|check" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Runs a Docker engine of its own with gVisor's runsc registered as the runtime
# `runsc`, for the tests and users that run candidates under `--runtime runsc`
# (see the README, "gVisor"). A sibling of second-engine.sh: both are built on
# scripts/lib/dockerd.sh (start, wait, image copy, stop, cleanup). Run as
# root; never touches the first engine's configuration (it only reads images
# from it) and never uses the network: unix socket only.
#
#   gvisor-engine.sh start  idempotent: installs Debian's `runsc` with apt when
#                           /usr/bin/runsc is missing, starts the engine unless
#                           it answers (recovering from a SIGKILLed one),
#                           copies sbx-busybox:latest and sbx-python:bookworm
#                           from the first engine when missing or different
#                           (`docker save | docker load`), then prints the env
#                           lines below
#   gvisor-engine.sh stop   idempotent: SIGTERM, 20 s, then SIGKILL of its
#                           dockerd/containerd/shims; removes pidfile + socket
#   gvisor-engine.sh env    prints the env lines only
#
# stdout carries only lines a shell can eval:
#   SBX_GVISOR_SOCK=unix:///run/sbx-gvisor.sock
#   SBX_GVISOR_PIDFILE=/run/sbx-gvisor.pid
# progress goes to stderr. Environment: SBX_DOCKER (docker CLI, talking to the
# first engine).
#
# The daemon reads its own --config-file, which registers the runtime:
#   {"runtimes": {"runsc": {"path": "/usr/bin/runsc",
#                           "runtimeArgs": ["--network=none"]}}}
# `--network=none` is required on this kind of host: without it every
# `--network none` container fails to start ("cannot run with network enabled
# in root network namespace"). runc stays the default runtime, so the same
# engine runs both sides of a runc/runsc comparison. Own data root, exec root,
# pidfile, socket and containerd namespace; no bridge, no iptables.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/dockerd.sh
. "$HERE/lib/dockerd.sh"

engine_setup sbx-gvisor gvisor-engine "gVisor engine"
CONFIG_EXTRA='  "runtimes": {
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}
  }'
LEFTOVER_RUNTIMES=(runc runsc)
LEFTOVER_HELPERS='^(fuse-overlayfs|runsc.*)$'

print_env() {
  echo "SBX_GVISOR_SOCK=$SOCK"
  echo "SBX_GVISOR_PIDFILE=$PIDFILE"
}

ensure_runsc() {
  if [ -x /usr/bin/runsc ]; then
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 || die "/usr/bin/runsc is missing and there is no apt-get to install Debian's runsc"
  say "installing Debian's runsc with apt"
  # A fresh machine may have no package lists yet: update once, then retry.
  DEBIAN_FRONTEND=noninteractive apt-get install -y runsc >&2 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y runsc >&2; } ||
    die "apt-get install runsc failed"
  [ -x /usr/bin/runsc ] || die "apt installed runsc but /usr/bin/runsc is missing"
}

# The engine knows the runtime `runsc` (a reload with SIGHUP re-reads the
# config file when an older start lacked it).
check_runtime() {
  local runtimes
  # shellcheck disable=SC2016 # a Go template, not shell
  runtimes=$(our_docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null || true)
  case " $runtimes " in
    *" runsc "*) return 0 ;;
  esac
  die "the gVisor engine at $SOCK has no runtime runsc (runtimes: ${runtimes:-none}); see $LOG"
}

engine_preflight() { ensure_runsc; }
engine_ready() { check_runtime; }

engine_main "$@"

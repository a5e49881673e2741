#!/usr/bin/env bash
# Runs a SECOND Docker engine beside the first one, for tests that spread work
# over several engines. Run as root; never touches the first engine (it only
# reads images from it) and never uses the network beyond 127.0.0.1.
#
#   second-engine.sh start  idempotent: starts the engine unless it answers
#                           (recovering from a SIGKILLed one: stale pidfile,
#                           socket, containerd, shims, containers, mounts),
#                           copies sbx-busybox:latest and sbx-python:bookworm
#                           from the first engine when missing or different
#                           (`docker save | docker load`, built first with
#                           build-images.sh if the first engine lacks them),
#                           then prints the env lines below
#   second-engine.sh stop   idempotent: SIGTERM, 20 s, then SIGKILL of its
#                           dockerd/containerd/shims; removes pidfile + socket
#   second-engine.sh env    prints the env lines only
#
# stdout carries only lines a shell can eval:
#   SBX_ENGINE2_SOCK=unix:///run/sbx-engine2.sock
#   SBX_ENGINE2_TCP=tcp://127.0.0.1:23750
#   SBX_ENGINE2_PIDFILE=/run/sbx-engine2.pid
# progress goes to stderr. Environment: SBX_DOCKER (docker CLI, talking to the
# first engine), SBX_ENGINE2_PORT (TCP port on 127.0.0.1, default 23750).
#
# The engine itself (start, wait, image copy, stop, cleanup) is
# scripts/lib/dockerd.sh, shared with gvisor-engine.sh. The daemon gets its
# own --config-file (so it does not read /etc/docker/daemon.json, whose
# data-root would clash with --data-root), its own data root, exec root,
# pidfile and sockets. Its containerd is the one dockerd manages itself, and
# lives under the exec root (/run/sbx-engine2/containerd/containerd.sock,
# state in /run/sbx-engine2/containerd, data in
# /var/lib/sbx-engine2/containerd), apart from the first engine's
# /var/run/docker/containerd; its own containerd namespace guards against
# sharing a system containerd if one ever appears at
# /run/containerd/containerd.sock. Storage driver: fuse-overlayfs, like the
# first engine (it works on a second data root beside the first). No bridge,
# no iptables: containers get --network none (or host). The TCP socket has no
# TLS: it is bound to 127.0.0.1 only; dockerd warns about it and sleeps 1 s
# at startup (--tls=false is explicit, as newer dockerd versions require).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/dockerd.sh
. "$HERE/lib/dockerd.sh"

engine_setup sbx-engine2 second-engine "second engine"
PORT=${SBX_ENGINE2_PORT:-23750}
TCP=tcp://127.0.0.1:$PORT
DOCKERD_ARGS=(--tls=false -H "$TCP")
UP_WHERE="$SOCK, $TCP"

print_env() {
  echo "SBX_ENGINE2_SOCK=$SOCK"
  echo "SBX_ENGINE2_TCP=$TCP"
  echo "SBX_ENGINE2_PIDFILE=$PIDFILE"
}

engine_check_up() {
  if ! answers "$TCP"; then
    die "the second engine answers on $SOCK but not on $TCP (started with another SBX_ENGINE2_PORT? run \`$0 stop\` first)"
  fi
}

engine_main "$@"

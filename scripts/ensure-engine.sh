#!/usr/bin/env bash
# Makes sure a Docker engine answers: if `docker info` fails, installs
# Debian's docker.io when the CLI/daemon is missing (as root), starts dockerd
# without a bridge or iptables rules, and waits for it. Fails loudly otherwise.
set -euo pipefail

DOCKER=${SBX_DOCKER:-docker}

if "$DOCKER" info >/dev/null 2>&1; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "ensure-engine: \`$DOCKER info\` fails and we are not root: start the docker engine first" >&2
  exit 125
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v "$DOCKER" >/dev/null 2>&1; then
  echo "ensure-engine: installing Debian's docker.io" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "ensure-engine: starting dockerd (log: /var/log/sbx-dockerd.log)" >&2
  nohup dockerd --bridge=none --iptables=false >/var/log/sbx-dockerd.log 2>&1 &
fi

for _ in $(seq 1 60); do
  if "$DOCKER" info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 1
done
echo "ensure-engine: the docker engine did not come up within 60 s; see /var/log/sbx-dockerd.log" >&2
exit 125

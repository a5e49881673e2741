#!/usr/bin/env bash
# Builds the local images sbx's tests and example suite use, from Debian's
# packages, when they are missing. Idempotent: an image that exists is kept.
#   sbx-busybox:latest   ~2 MB, busybox only: fast tests
#   sbx-python:bookworm  Debian bookworm minbase + python3: the example suite
#   sbx-polyglot:bookworm  only when asked (`build-images.sh polyglot`): minbase
#                        + gcc, g++, golang-go, rustc, default-jdk-headless,
#                        nodejs, ruby, python3 (~1.4 GB, several minutes)
# Usage: build-images.sh [polyglot]
# Environment: SBX_DOCKER (docker CLI), SBX_REBUILD=1 to rebuild anyway.
set -euo pipefail

DOCKER=${SBX_DOCKER:-docker}
BUSYBOX_IMAGE=sbx-busybox:latest
PYTHON_IMAGE=sbx-python:bookworm
POLYGLOT_IMAGE=sbx-polyglot:bookworm
POLYGLOT_PACKAGES=gcc,g++,libc6-dev,golang-go,rustc,default-jdk-headless,nodejs,ruby,python3

want_polyglot=0
for arg in "$@"; do
  case "$arg" in
    polyglot) want_polyglot=1 ;;
    *) echo "build-images: unknown image \`$arg\` (known: polyglot)" >&2; exit 64 ;;
  esac
done

have_image() {
  [ "${SBX_REBUILD:-0}" != 1 ] && "$DOCKER" image inspect "$1" >/dev/null 2>&1
}

apt_updated=0
need_pkg() { # need_pkg PACKAGE: install a Debian package unless it is installed
  if ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; then
    if [ "$apt_updated" = 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
  fi
}

if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "build-images: the docker engine is not reachable (\`$DOCKER info\` failed)" >&2
  exit 125
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if have_image "$BUSYBOX_IMAGE"; then
  echo "build-images: $BUSYBOX_IMAGE present"
else
  need_pkg busybox-static # static, so it runs FROM scratch
  root="$work/busybox"
  mkdir -p "$root/bin" "$root/tmp" "$root/work"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  tar -C "$root" -c . | "$DOCKER" import \
    --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' - "$BUSYBOX_IMAGE" >/dev/null
  echo "build-images: built $BUSYBOX_IMAGE"
fi

if have_image "$PYTHON_IMAGE"; then
  echo "build-images: $PYTHON_IMAGE present"
else
  need_pkg mmdebstrap
  mmdebstrap --quiet --variant=minbase --include=python3 bookworm - \
    | "$DOCKER" import --change 'CMD ["python3"]' - "$PYTHON_IMAGE" >/dev/null
  echo "build-images: built $PYTHON_IMAGE"
fi

if [ "$want_polyglot" = 1 ]; then
  if have_image "$POLYGLOT_IMAGE"; then
    echo "build-images: $POLYGLOT_IMAGE present"
  else
    need_pkg mmdebstrap
    started=$(date +%s)
    # PATH is set explicitly: an imported image has no environment of its own.
    mmdebstrap --quiet --variant=minbase --include="$POLYGLOT_PACKAGES" bookworm - \
      | "$DOCKER" import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["sh"]' - "$POLYGLOT_IMAGE" >/dev/null
    echo "build-images: built $POLYGLOT_IMAGE in $(($(date +%s) - started)) s"
  fi
fi

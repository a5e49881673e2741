#!/usr/bin/env bash
# Debian's chromium, for tests/engine/html_report.rs (the HTML report rendered in
# a real browser, headless): installed when missing, idempotent. Prints the
# browser's path.
set -euo pipefail
find_it() { command -v chromium || command -v chromium-browser || true; }
if [ -z "$(find_it)" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
fi
path=$(find_it)
if [ -z "$path" ]; then
    echo "scripts/chromium.sh: chromium is not installed and could not be" >&2
    exit 1
fi
echo "$path"

#!/usr/bin/env bash
# Compatibility shim: run_sandboxed.sh FILE [IMAGE] [TIMEOUT], now served by sbx.
exec "${SBX:-sbx}" run "$@"

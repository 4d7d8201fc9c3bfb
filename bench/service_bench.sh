#!/usr/bin/env bash
# Starts meshtuned on a free loopback port with a fresh database and the built-in machine
# numbers, runs //bench:service_bench against it (cached Lookups from 8 clients, then a
# model-only batch of 20 tunes), and stops the daemon with SIGTERM.
#
#   bash bench/service_bench.sh [service_bench flags, e.g. --requests 10000 --batch 20]
set -euo pipefail
cd "$(dirname "$0")/.."

bazel build -c opt //daemon:meshtuned //bench:service_bench
work="$(mktemp -d)"
daemon=""
cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon"
    wait "$daemon" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

MESHTUNE_HOME="$work/home" bazel-bin/daemon/meshtuned --listen 127.0.0.1:0 --db "$work/tuning.db" \
  --log-level warn >"$work/out" 2>"$work/err" &
daemon=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/out" 2>/dev/null && break
  sleep 0.1
done
address="$(sed -n 's/^meshtuned listening on //p' "$work/out")"
[ -n "$address" ] || { echo "meshtuned did not start:" >&2; cat "$work/err" >&2; exit 1; }
echo "meshtuned on $address (database $work/tuning.db)"
bazel-bin/bench/service_bench --server "$address" "$@"

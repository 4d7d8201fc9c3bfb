#!/usr/bin/env bash
# The tuning report and meshtuned's HTML pages in a real browser: Debian's Chromium, headless,
# driven by Selenium through chromedriver (tests/browser_check.py). A small tune (one
# candidate measured under MPI on 2 ranks, beside the library) writes a report with --report,
# its result as JSON (what the boxes of "Measured side by side" must show) and stores record
# 1; meshtuned --http serves the database on a free loopback port; the browser loads the
# report file and the daemon's pages and checks their elements, that every SVG is drawn, a
# box per measured run with a sample, and that the console has no errors.
# 6: the sharding pictures' cells, 2 ranks x 3 tensors.
# Installs chromium, chromium-driver and python3-selenium when missing (as tools/deps.sh).
set -euo pipefail

packages=(chromium chromium-driver python3-selenium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "browser_test: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export HOME="$tmp/home" MESHTUNE_HOME="$tmp/meshtune" XDG_CACHE_HOME="$tmp/cache"
mkdir -p "$HOME"
db="$tmp/browser.db"
report="$tmp/report.html"

# One candidate measured on 2 ranks, so that the report has a scatter of predicted against
# measured and a measured curve.
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cli/meshtune tune --expr 'C[m,n] += A[m,k] * B[k,n]' --extents m=32,n=32,k=32 --mesh x=2 \
  --top-k 1 --reps 1 --warmup 0 --max-evaluations 200 --db "$db" --report "$report" --json \
  >"$tmp/tune.json" 2>"$tmp/tune.err" || { cat "$tmp/tune.err"; exit 1; }

daemon/meshtuned --listen 127.0.0.1:0 --db "$db" --http 127.0.0.1:0 >"$tmp/daemon.out" \
  2>"$tmp/daemon.err" &
daemon=$!
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 300); do
  url=$(sed -n 's/^meshtuned http on //p' "$tmp/daemon.out")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "meshtuned did not serve HTTP:"; cat "$tmp/daemon.err"; exit 1; }

profile=$(mktemp -d "$tmp/chromium.XXXXXX")
/usr/bin/python3 tests/browser_check.py "$report" "$url" "$profile" 6 "$tmp/tune.json"

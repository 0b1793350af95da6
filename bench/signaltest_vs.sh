#!/usr/bin/env bash
# Physics side by side: `latscope signaltest` against rt-tests' signaltest,
# the same command line, alternating, as the drop-in is meant to be used.
#
#   bench/signaltest_vs.sh [--pairs N] [--loops L] [--args "ARGS"]
#
# Runs N pairs (default 5) of `signaltest ARGS -l L -q --json=FILE` (default
# ARGS "-p 90", L 10000: about 6.5 s each), the original first in odd pairs
# and latscope first in even ones, each through a link named signaltest (the
# original from $RTBIN, default /usr/bin; latscope from $LATSCOPE, default
# target/release/latscope, built beforehand). Per run it prints every
# thread's avg (us, from the JSON: thread."N".avg) and the CPU time of the
# whole process per lap of thread 0 (perf stat's task-clock, or GNU time's
# user+sys where perf is missing, over the JSON's cycles); then per tool the
# median over the pairs and the ratio latscope/original. Needs root.

set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
LATSCOPE=${LATSCOPE:-$REPO/target/release/latscope}
RTBIN=${RTBIN:-/usr/bin}
PAIRS=5 LOOPS=10000 ARGS="-p 90"
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --loops) LOOPS=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    *) echo "usage: $0 [--pairs N] [--loops L] [--args \"ARGS\"]" >&2; exit 2 ;;
  esac
done
[ -x "$LATSCOPE" ] || { echo "error: $LATSCOPE not built (cargo build --release)" >&2; exit 1; }
[ -x "$RTBIN/signaltest" ] || { echo "error: $RTBIN/signaltest not found (Debian rt-tests)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/signaltest-vs.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/real" "$WORK/ours"
ln -s "$RTBIN/signaltest" "$WORK/real/signaltest"
ln -s "$LATSCOPE" "$WORK/ours/signaltest"

# one_run SIDE -> "avg0 avg1 ... cpu_us_per_lap"
one_run() {
  local side=$1 json="$WORK/$1/run.json" cpu_ms
  # shellcheck disable=SC2086
  if command -v perf >/dev/null; then
    cpu_ms=$(perf stat -x, -e task-clock -o "$WORK/$side/perf" \
      "$WORK/$side/signaltest" $ARGS -l "$LOOPS" -q --json="$json" >/dev/null 2>&1 &&
      awk -F, '/task-clock/ {print $1}' "$WORK/$side/perf")
  else
    cpu_ms=$(/usr/bin/time -f '%U %S' "$WORK/$side/signaltest" $ARGS -l "$LOOPS" -q \
      --json="$json" 2>&1 >/dev/null | tail -1 | awk '{print ($1 + $2) * 1000}')
  fi
  python3 - "$json" "$cpu_ms" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
threads = [data["thread"][str(i)] for i in range(data["num_threads"])]
laps = threads[0]["cycles"]
print(" ".join("%.2f" % t["avg"] for t in threads), "%.2f" % (float(sys.argv[2]) * 1000 / laps))
EOF
}

for k in $(seq 1 "$PAIRS"); do
  if [ $((k % 2)) -eq 1 ]; then order="real ours"; else order="ours real"; fi
  for side in $order; do
    echo "$side $(one_run "$side")" | tee -a "$WORK/rows"
  done
done

python3 - "$WORK/rows" <<'EOF'
import statistics, sys
rows = {"real": [], "ours": []}
for line in open(sys.argv[1]):
    side, *values = line.split()
    rows[side].append([float(v) for v in values])
median = {s: [statistics.median(col) for col in zip(*r)] for s, r in rows.items()}
names = ["avg T:%d (us)" % i for i in range(len(median["real"]) - 1)] + ["CPU per lap (us)"]
print("%-18s %10s %10s %8s" % ("median", "signaltest", "latscope", "ratio"))
for name, real, ours in zip(names, median["real"], median["ours"]):
    print("%-18s %10.2f %10.2f %8.3f" % (name, real, ours, ours / real if real else float("nan")))
EOF

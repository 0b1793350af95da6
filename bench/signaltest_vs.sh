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
# user+sys where perf is missing, over the JSON's cycles), and the ring
# threads' own CPU per wake-up (see ring_cpu; a run must last 4 s or more);
# then per tool the median over the pairs and the ratio latscope/original.
# Needs root.

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

# ring_cpu PID -> the ring threads' CPU per wake-up (ns), from
# /proc/PID/task/TID/schedstat (CPU ns, wait ns, timeslices) read 1 s into
# the run and 3 s later: each thread's CPU over its wake-ups in between,
# averaged over the threads. The ring threads are those with more than 1000
# wake-ups in the 3 s (a lap each; the main loop wakes every 10 ms, 300):
# start-up, exit and the main loop are left out, which the whole process's
# task-clock per lap keeps in.
ring_cpu() {
  local pid=$1 t tid cpu wait slices
  declare -A first=()
  sleep 1
  for t in /proc/"$pid"/task/*; do
    tid=${t##*/}
    read -r cpu wait slices <"$t/schedstat" 2>/dev/null && first[$tid]="$cpu $slices"
  done
  sleep 3
  for t in /proc/"$pid"/task/*; do
    tid=${t##*/}
    [ -n "${first[$tid]:-}" ] || continue
    read -r cpu wait slices <"$t/schedstat" 2>/dev/null || continue
    set -- ${first[$tid]}
    [ $((slices - $2)) -gt 1000 ] && echo $(((cpu - $1) / (slices - $2)))
  done | awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n; else printf "nan" }'
}

# one_run SIDE -> "avg0 avg1 ... cpu_us_per_lap ring_cpu_ns_per_wakeup"
one_run() {
  local side=$1 json="$WORK/$1/run.json" cpu_ms runner pid ring
  # shellcheck disable=SC2086
  if command -v perf >/dev/null; then
    perf stat -x, -e task-clock -o "$WORK/$side/perf" \
      "$WORK/$side/signaltest" $ARGS -l "$LOOPS" -q --json="$json" >/dev/null 2>&1 &
  else
    /usr/bin/time -o "$WORK/$side/time" -f '%U %S' "$WORK/$side/signaltest" $ARGS \
      -l "$LOOPS" -q --json="$json" >/dev/null 2>&1 &
  fi
  runner=$!
  pid=""
  for _ in $(seq 100); do
    pid=$(pgrep -P "$runner" | head -1) && [ -n "$pid" ] && break
    sleep 0.01
  done
  ring=$(ring_cpu "$pid")
  wait "$runner"
  if command -v perf >/dev/null; then
    cpu_ms=$(awk -F, '/task-clock/ {print $1}' "$WORK/$side/perf")
  else
    cpu_ms=$(awk '{print ($1 + $2) * 1000}' "$WORK/$side/time")
  fi
  python3 - "$json" "$cpu_ms" "$ring" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
threads = [data["thread"][str(i)] for i in range(data["num_threads"])]
laps = threads[0]["cycles"]
print(" ".join("%.2f" % t["avg"] for t in threads), "%.2f" % (float(sys.argv[2]) * 1000 / laps),
      sys.argv[3])
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
names = ["avg T:%d (us)" % i for i in range(len(median["real"]) - 2)] + [
    "CPU per lap (us)", "ring CPU/wake (ns)"]
print("%-18s %10s %10s %8s" % ("median", "signaltest", "latscope", "ratio"))
for name, real, ours in zip(names, median["real"], median["ours"]):
    print("%-18s %10.2f %10.2f %8.3f" % (name, real, ours, ours / real if real else float("nan")))
EOF

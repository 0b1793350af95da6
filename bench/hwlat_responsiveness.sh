#!/usr/bin/env bash
# Whether a 2-CPU machine stays responsive while `latscope hwlat` samples
# every CPU at hwlatdetect's duty cycle (issue 41): for the run's length,
# probes sleep 1 ms again and again and keep their worst lateness, and a
# shell command's round trip (`true` started and waited for) is timed.
#
#   bench/hwlat_responsiveness.sh [--seconds S] [--out DIR]
#
# 1. Builds latscope in release mode (or takes LATSCOPE_BIN).
# 2. Starts `latscope hwlat -D S -q --json F` (every CPU, 500 ms of every
#    1 s, FIFO 95), and beside it, for S seconds:
#      - a normal (SCHED_OTHER) probe and a FIFO 94 probe, each sleeping
#        1 ms in a loop: worst and 99.9th lateness, ms;
#      - `true` started from bash every 100 ms: worst round trip, ms.
# 3. Prints the probes' figures and the run's hardware/OS gap counts.
#
# Needs root, python3 and jq.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
SECS=60
bench_options "seconds out" "$@"
bench_setup "hwlat needs real-time rights: run as root" python3 jq

probe() { # $1 = name, $2 = chrt arguments (empty: SCHED_OTHER)
  # shellcheck disable=SC2086
  ${2:+chrt $2} python3 - "$SECS" >"$OUT/$1.txt" <<'PY' &
import sys, time
end = time.monotonic() + float(sys.argv[1])
late = []
while time.monotonic() < end:
    t = time.monotonic()
    time.sleep(0.001)
    late.append((time.monotonic() - t - 0.001) * 1000)
late.sort()
print(f"{len(late)} sleeps, worst {late[-1]:.2f} ms, p99.9 {late[int(len(late) * 0.999)]:.3f} ms")
PY
}

echo "== hwlat -D $SECS on every CPU, with the probes beside it"
"$LATSCOPE" hwlat -D "$SECS" -q --json "$OUT/hwlat.json" >"$OUT/hwlat.out" 2>&1 &
HWLAT=$!
sleep 1
probe normal ""
probe fifo94 "-f 94"
worst=0
end=$((SECONDS + SECS - 2))
while [ $SECONDS -lt $end ]; do
  t0=$(date +%s%N); true "$(/bin/true)"; t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
  [ $ms -gt $worst ] && worst=$ms
  sleep 0.1
done
wait
echo "normal probe:  $(cat "$OUT/normal.txt")"
echo "FIFO 94 probe: $(cat "$OUT/fifo94.txt")"
echo "a command's round trip (fork, exec, wait), worst: $worst ms"
jq -r '.tests[0].series[] | "CPU \(.detail.cpu): \(.detail.hardware_gaps) hardware gaps, \(.detail.os_gaps) OS gaps"' "$OUT/hwlat.json"
kill -0 "$HWLAT" 2>/dev/null && echo "hwlat still running?" || true
echo "files: $OUT"

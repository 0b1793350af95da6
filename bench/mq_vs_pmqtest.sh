#!/usr/bin/env bash
# Compare `latscope mq` with rt-tests' pmqtest on this machine.
#
#   bench/mq_vs_pmqtest.sh [--memory] [--runs N] [--loops N] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs `latscope mq` and `pmqtest` with the same settings
#    (-S -p99 -i100 -l LOOPS -q), alternately, N times each (default 3), and
#    prints per run and per pair: samples, min/avg/max in microseconds, the
#    ratio of averages, and the CPU time (user+system) per sample.
# 3. If perf is installed (Debian package linux-perf): the precise CPU time
#    (perf stat -e task-clock) per sample of both tools with equal pairs
#    (-S -p99 -i100 -d0 -l LOOPS -q), N runs each, alternately.
# 4. With --memory: runs `latscope mq -S -p99 -i100 -D 5 -q` and `-D 60 -q`
#    under /usr/bin/time -v and prints both maximum resident set sizes
#    (about 70 s more).
#
# Where the figures come from:
#   latscope: its JSON (--json FILE), tests[0].series[i]: samples, min_ns,
#             avg_ns, max_ns (exact, CLOCK_MONOTONIC nanoseconds).
#   pmqtest:  its final lines with -q ("#1 -> #0, Min 1, Cur 2, Avg 2, Max 70",
#             integer microseconds) and its JSON (--json FILE):
#             thread."N".receiver.{min,avg,max} (avg with 2 decimals) and
#             thread."N".sender.samples. pmqtest -S stops every pair as soon as
#             the fastest pair has done its loops, so the slower pairs have fewer
#             samples; the sample counts below are the ones it actually took.
#   CPU time: user+system time of the measured process (bash `times` in a
#             subshell that runs only that process; 1 ms resolution), divided
#             by the samples of all pairs together.
#
# Needs root (SCHED_FIFO 99, mlockall), pmqtest (Debian package rt-tests), jq,
# awk, cargo, and /usr/bin/time (Debian package `time`) for --memory.
#
# Bounded in time: every command runs under `timeout` (the build 900 s, each
# comparison run 120 s, the memory runs their duration + 60 s), and on exit,
# Ctrl-C or SIGTERM the running command's whole process group is stopped, so
# nothing is left behind. Every command is printed (prefixed with "+") before
# it runs. Raw outputs are kept in the output directory (printed at the end).
# The process control, parsing and reports are shared with
# bench/ipc_vs_rt_tests.sh in bench/lib.sh.

PMQTEST=${PMQTEST:-/usr/bin/pmqtest}
RUNS=3
LOOPS=20000
MEMORY=0
OUT=""
BUILD_TIMEOUT=900
RUN_TIMEOUT=120

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--memory MEMORY=1
--runs RUNS a number
--loops LOOPS a number
--out OUT a directory
" "$@"
whole_numbers "--runs and --loops" "$RUNS" "$LOOPS"
[ "$RUNS" -ge 1 ] && [ "$LOOPS" -ge 1 ] || { echo "--runs and --loops must be at least 1" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root (SCHED_FIFO priority 99 and mlockall)"
[ -x "$PMQTEST" ] || die "$PMQTEST not found (apt-get install rt-tests)"
need jq "apt-get install jq"
need awk
need cargo
need timeout "coreutils"
if [ "$MEMORY" = 1 ] && [ ! -x /usr/bin/time ]; then
  die "/usr/bin/time not found (apt-get install time), needed for --memory"
fi
bench_out_dir

print_machine "$PMQTEST"
build_latscope "$BUILD_TIMEOUT"

# ---------------------------------------------------------------- comparison
SETTINGS=(-S -p99 -i100 -l "$LOOPS" -q)
ROWS="$OUT/rows.tsv"
: >"$ROWS"
failed=0

echo "== comparison: ${SETTINGS[*]}, $RUNS runs each, alternating"
for run in $(seq 1 "$RUNS"); do
  compare_run "$ROWS" "$run" latscope "latscope-$run" "$LATSCOPE" mq "${SETTINGS[@]}" || failed=1
  compare_run "$ROWS" "$run" pmqtest "pmqtest-$run" "$PMQTEST" "${SETTINGS[@]}" || failed=1
done
echo

report_results "$ROWS" pmqtest
report_goals "$ROWS" pmqtest

# ---------------------------------------------------------------- CPU, precise
# With -d0 both tools run for the same wall time (pmqtest stops all pairs with
# the first one), on the same mix of pairs.
if have_perf; then
  echo "== CPU time per sample, precise (perf stat -e task-clock): -S -p99 -i100 -d0 -l $LOOPS -q, $RUNS runs each, alternating"
  : >"$OUT/taskclock.taskclock"
  for run in $(seq 1 "$RUNS"); do
    taskclock_run taskclock "$run" latscope "$LATSCOPE" mq -S -p99 -i100 -d0 -l "$LOOPS" -q || failed=1
    taskclock_run taskclock "$run" pmqtest "$PMQTEST" -S -p99 -i100 -d0 -l "$LOOPS" -q || failed=1
  done
  taskclock_summary "$OUT/taskclock.taskclock" pmqtest
  echo
else
  echo "== CPU time per sample, precise: skipped (perf not available: apt-get install linux-perf)"
  echo
fi

# ---------------------------------------------------------------- memory
if [ "$MEMORY" = 1 ]; then
  echo "== memory: maximum resident set size of latscope mq -S -p99 -i100 -D <T> -q"
  for d in 5 60; do
    name="memory-${d}s"
    if run_bounded "$name" $((d + 60)) /usr/bin/time -v "$LATSCOPE" mq -S -p99 -i100 -D "$d" -q; then
      rss=$(awk -F': *' '/Maximum resident set size/ {print $2}' "$OUT/$name.err")
      samples=$(awk '/^pair [0-9]/ { for (i = 3; i < NF; i++) if ($i == "us") { s += $(i + 1); break } }
        END { print s + 0 }' "$OUT/$name.out")
      echo "  -D $d: max RSS ${rss:-?} kB  (samples taken: $samples)"
      echo "$d ${rss:-0}" >>"$OUT/memory.txt"
    else
      failed=1
    fi
  done
  if [ -s "$OUT/memory.txt" ] && [ "$(wc -l <"$OUT/memory.txt")" = 2 ]; then
    awk 'NR==1 {a = $2} NR==2 {b = $2} END {
      printf "  growth from 5 s to 60 s: %+d kB (%+.1f%%) -> %s\n", b - a, (b - a) * 100 / a,
        (b - a <= 0.05 * a ? "no growth beyond 5% (MET)" : "grows (NOT MET)") }' "$OUT/memory.txt"
  fi
  echo
fi

# ---------------------------------------------------------------- leftovers
left=$(ls /dev/mqueue 2>/dev/null | grep -E '^(latscope-|syncmsg|testmsg)' || true)
[ -z "$left" ] || echo "warning: message queues left in /dev/mqueue: $left" >&2
echo "raw outputs: $OUT"
exit "$failed"

#!/usr/bin/env bash
# Compare latscope's signal, svsem and sem commands with rt-tests' sigwaittest,
# svsematest and ptsematest on this machine, then record `latscope ipc` tables.
#
#   bench/ipc_vs_rt_tests.sh [--runs N] [--loops N] [--only LIST] [--variant V]
#                            [--no-ipc] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Five comparisons, N runs each (default 3), alternating latscope and the
#    original with the same settings (L = --loops, default 20000):
#      signal    latscope signal    -a -t -p99 -i100 -d0 -l L -q   vs sigwaittest (same)
#      signal-f  latscope signal -f -a -t -p99 -i100 -d0 -l L -q   vs sigwaittest -f (same)
#      svsem     latscope svsem     -a -t -p99 -i100 -d0 -l L -q   vs svsematest (same)
#      svsem-f   latscope svsem -f  -a -t -p99 -i100 -d0 -l L -q   vs svsematest -f (same)
#      sem       latscope sem --mode oneway -n NCPU -p 99 -I 100 -i L -q
#                                               vs ptsematest -S -p99 -i100 -d0 -l L -q
#    One pair per CPU, both tasks of pair N on CPU N; -a -t gives pair N the
#    priority 99-N in all four tools; latscope sem and ptsematest -S give every
#    pair priority 99. -d0: every pair has the 100 us interval, so the
#    originals' "stop all pairs when the first is done" costs few samples.
#    Run 1 of every comparison, then run 2, and so on, so that slow drifts of
#    the machine's load spread over all of them.
#    --only takes a comma list of the names above.
#    --variant changes the pairs (default d0, as above):
#      single  one pair, on CPU 0: -a -t 1 (latscope sem -n 1, ptsematest -a -t 1)
#      d1      -d1 instead of -d0: pair 1 runs every 101 us, so the two pairs
#              drift against each other instead of waking in the same instant
#              (latscope starts every pair's absolute periods at one common
#              time); not for sem (latscope sem has no -d)
# 3. If perf is installed (Debian package linux-perf): the same commands again,
#    N runs each, alternating, under `perf stat -e task-clock`, for the CPU time
#    per sample (the scheduler's exact run time of the tool and all its
#    children).
# 4. Prints per comparison: per run and pair samples, min/avg/max (us), the
#    ratio of averages; then the verdict per goal (avg within 15 % or 0.5 us,
#    min no higher, CPU time per sample no higher).
# 5. Unless --no-ipc: `latscope ipc -q`, `latscope ipc -q --fork` and
#    `latscope ipc -q --cross-cpu --mode oneway -D 3` (about 2.5 min together).
#
# Where the figures come from:
#   latscope: its JSON (--json FILE), tests[0].series[i]: samples, min_ns,
#             avg_ns, max_ns (exact, CLOCK_MONOTONIC nanoseconds).
#   rt-tests: their final lines with -q ("#1 -> #0, Min 1, Cur 2, Avg 2, Max 70",
#             integer microseconds from gettimeofday) for min/max, their JSON
#             (--json FILE) for the avg (2 decimals) and thread."N".sender.samples.
#   CPU time: perf task-clock of the whole process tree, divided by the samples
#             of all pairs together. Without perf: bash `times`, which misses
#             the originals' -f children (they are never waited for), so the
#             -f CPU verdict then favours the originals and is not valid.
#
# Needs root (SCHED_FIFO 99, mlockall), sigwaittest, svsematest and ptsematest
# (Debian package rt-tests), jq, awk, cargo.
#
# Bounded in time: every command runs under `timeout` (the build 900 s, each
# comparison run 120 s, each ipc table 300 s), and on exit, Ctrl-C or SIGTERM
# the running command's whole process group is stopped, so nothing is left
# behind. Every command is printed (prefixed with "+") before it runs. Raw
# outputs are kept in the output directory (printed at the end). About 5 min
# with the defaults. Shared functions: bench/lib.sh.

RTBIN=${RTBIN:-/usr/bin}
RUNS=3
LOOPS=20000
ONLY="signal,signal-f,svsem,svsem-f,sem"
VARIANT=d0
IPC=1
OUT=""
BUILD_TIMEOUT=900
RUN_TIMEOUT=120
IPC_TIMEOUT=300

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--runs RUNS a number
--loops LOOPS a number
--only ONLY a list
--variant VARIANT d0, d1 or single
--no-ipc IPC=0
--out OUT a directory
" "$@"
whole_numbers "--runs and --loops" "$RUNS" "$LOOPS"
[ "$RUNS" -ge 1 ] && [ "$LOOPS" -ge 1 ] || { echo "--runs and --loops must be at least 1" >&2; exit 2; }
IFS=, read -r -a COMPARISONS <<<"$ONLY"
for c in "${COMPARISONS[@]}"; do
  case "$c" in signal|signal-f|svsem|svsem-f|sem) ;; *) die "--only: unknown comparison '$c'" ;; esac
done
case "$VARIANT" in d0|single) ;; d1)
  # latscope sem has no distance option (every pair has the same interval).
  [[ ",$ONLY," != *,sem,* ]] || die "--variant d1: latscope sem has no -d; leave sem out (--only)" ;;
  *) die "--variant: d0, d1 or single" ;; esac

[ "$(id -u)" = 0 ] || die "run as root (SCHED_FIFO priority 99 and mlockall)"
for t in sigwaittest svsematest ptsematest; do
  [ -x "$RTBIN/$t" ] || die "$RTBIN/$t not found (apt-get install rt-tests)"
done
need jq "apt-get install jq"
need awk
need cargo
need timeout "coreutils"
bench_out_dir

# ptsematest -S makes one pair per configured CPU; latscope sem -n the same count.
NCPU=$(getconf _NPROCESSORS_CONF)
[ "$NCPU" = "$(nproc)" ] || echo "warning: $NCPU CPUs configured, $(nproc) usable: ptsematest -S places pairs on all $NCPU" >&2

print_machine "$RTBIN/sigwaittest" "$RTBIN/svsematest" "$RTBIN/ptsematest"
build_latscope "$BUILD_TIMEOUT"

# comparison NAME: sets REF (the original's name), LCMD and RCMD (the commands,
# without --json).
comparison() {
  local common lsem rsem
  case "$VARIANT" in
    d0)     common=(-a -t -p99 -i100 -d0 -l "$LOOPS" -q)
            lsem=(-n "$NCPU"); rsem=(-S -p99 -i100 -d0) ;;
    d1)     common=(-a -t -p99 -i100 -d1 -l "$LOOPS" -q) ;;
    single) common=(-a -t 1 -p99 -i100 -d0 -l "$LOOPS" -q)
            lsem=(-n 1); rsem=(-a -t 1 -p99 -i100 -d0) ;;
  esac
  case "$1" in
    signal)   REF=sigwaittest; LCMD=("$LATSCOPE" signal "${common[@]}");    RCMD=("$RTBIN/sigwaittest" "${common[@]}") ;;
    signal-f) REF=sigwaittest; LCMD=("$LATSCOPE" signal -f "${common[@]}"); RCMD=("$RTBIN/sigwaittest" -f "${common[@]}") ;;
    svsem)    REF=svsematest;  LCMD=("$LATSCOPE" svsem "${common[@]}");     RCMD=("$RTBIN/svsematest" "${common[@]}") ;;
    svsem-f)  REF=svsematest;  LCMD=("$LATSCOPE" svsem -f "${common[@]}");  RCMD=("$RTBIN/svsematest" -f "${common[@]}") ;;
    sem)      REF=ptsematest
              LCMD=("$LATSCOPE" sem --mode oneway "${lsem[@]}" -p 99 -I 100 -i "$LOOPS" -q)
              RCMD=("$RTBIN/ptsematest" "${rsem[@]}" -l "$LOOPS" -q) ;;
  esac
}

# What the tools leave behind (System V semaphore sets, shared memory names).
leftovers() {
  { ipcs -s 2>/dev/null | awk '$1 ~ /^0x/' | wc -l; ls /dev/shm 2>/dev/null | grep -cE 'latscope|sigwaittest|svsematest'; } | paste -sd' '
}
before=$(leftovers)
failed=0

# ---------------------------------------------------------------- comparison
echo "== comparisons: ${COMPARISONS[*]}; variant $VARIANT; $RUNS runs each, alternating"
for c in "${COMPARISONS[@]}"; do : >"$OUT/$c.rows"; done
for run in $(seq 1 "$RUNS"); do
  for c in "${COMPARISONS[@]}"; do
    comparison "$c"
    compare_run "$OUT/$c.rows" "$run" latscope "$c-latscope-$run" "${LCMD[@]}" || failed=1
    compare_run "$OUT/$c.rows" "$run" "$REF" "$c-$REF-$run" "${RCMD[@]}" || failed=1
  done
done
echo

# ---------------------------------------------------------------- CPU, precise
PERF=0
if have_perf; then
  PERF=1
  echo "== CPU time per sample, precise (perf stat -e task-clock): the same commands, $RUNS runs each, alternating"
  for c in "${COMPARISONS[@]}"; do : >"$OUT/$c.taskclock"; done
  for run in $(seq 1 "$RUNS"); do
    for c in "${COMPARISONS[@]}"; do
      comparison "$c"
      echo "  [$c]"
      taskclock_run "$c" "$run" latscope "${LCMD[@]}" || failed=1
      taskclock_run "$c" "$run" "$REF" "${RCMD[@]}" || failed=1
    done
  done
  echo
else
  echo "== CPU time per sample, precise: skipped (perf not available: apt-get install linux-perf);"
  echo "   the CPU verdicts below use bash times, which misses the originals' -f children"
  echo
fi

# ---------------------------------------------------------------- reports
for c in "${COMPARISONS[@]}"; do
  comparison "$c"
  echo "######## $c: latscope ${LCMD[*]:1}  vs  $REF ${RCMD[*]:1}"
  report_results "$OUT/$c.rows" "$REF"
  case "$c" in *-f) echo "(bash times above misses $REF -f's children, which it never waits for: its figure is not comparable; the verdict uses perf when available)"; echo ;; esac
  if [ "$PERF" = 1 ]; then
    report_goals "$OUT/$c.rows" "$REF" "$OUT/$c.taskclock" | tee "$OUT/$c.goals"
  else
    report_goals "$OUT/$c.rows" "$REF" | tee "$OUT/$c.goals"
  fi
done

echo "== summary"
for c in "${COMPARISONS[@]}"; do
  sed "s/^/$c: /" "$OUT/$c.goals" | grep -v ': $' | grep -v ': == goals'
done
echo

# ---------------------------------------------------------------- latscope ipc
if [ "$IPC" = 1 ]; then
  n=0
  for args in "-q" "-q --fork" "-q --cross-cpu --mode oneway -D 3"; do
    n=$((n + 1))
    read -r -a a <<<"$args"
    echo "== latscope ipc $args"
    if run_bounded "ipc-$n" "$IPC_TIMEOUT" "$LATSCOPE" ipc "${a[@]}" --json "$OUT/ipc-$n.json"; then
      cat "$OUT/ipc-$n.out"
    else
      failed=1
    fi
    echo
  done
fi

# ---------------------------------------------------------------- leftovers
after=$(leftovers)
[ "$before" = "$after" ] || echo "warning: System V semaphore sets / shared memory names before and after: $before -> $after" >&2
echo "raw outputs: $OUT"
exit "$failed"

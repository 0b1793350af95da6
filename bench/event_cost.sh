#!/usr/bin/env bash
# What the in-kernel breakdown costs per kernel event: the CPU time of one
# system call that fires the event, with nothing attached and with
# `latscope timer --breakdown --collector bpf` running, in alternating rounds.
#
#   bench/event_cost.sh [--rounds N] [--calls N] [--cpu C] [--other LATSCOPE] [--out DIR]
#
# 1. Builds latscope in release mode and bench/event_cost.c (gcc -O2).
# 2. Per round (N = --rounds, default 3), per variant, in this order:
#      none       nothing running
#      timer      latscope timer -c C -p 1000 -P 99 -q: the same timer, no programs
#      breakdown  this tree's latscope: the timer with --breakdown --collector bpf
#      other      the same with --other's latscope (e.g. a build of main), when given
#    with the timer started in the background (1.5 s to load and attach,
#    stopped with SIGINT once the calls are done), then
#      event_cost timerfd C CALLS   timerfd_settime: one hrtimer_start (latscope_arm)
#      event_cost yield C CALLS     sched_yield: one __schedule() (latscope_on_cpu)
#    on the timer's CPU (C = --cpu, default 1; CALLS = --calls, default 1000000),
#    each bounded to 60 s. The timer itself wakes 1000 times a second: its
#    own events are the same in every variant but "none".
# 3. Prints every run, then per variant and kind the median over the rounds
#    of the ns of CPU per call (over all calls, and over the cheapest chunk of
#    5,000 calls: see bench/event_cost.c), and its difference from "timer": the cost per
#    event of the programs on it (the timer's own 1000 wake-ups a second on
#    the CPU are in both; "none" shows what they cost).
#
# Needs root and gcc. The background timer is stopped with its process group on
# every exit, Ctrl-C included.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=""
ROUNDS=3
CALLS=1000000
CPU=1
OTHER=""
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --calls) CALLS=$2; shift 2 ;;
    --cpu) CPU=$2; shift 2 ;;
    --other) OTHER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--calls N] [--cpu C] [--other LATSCOPE] [--out DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
need gcc "apt-get install gcc"
[ "$(id -u)" = 0 ] || die "--breakdown --collector bpf needs root"
[ -z "$OTHER" ] || [ -x "$OTHER" ] || die "--other $OTHER is not an executable"
bench_out_dir
print_machine
build_latscope 900
EVENT_COST="$OUT/event_cost"
gcc -O2 -o "$EVENT_COST" "$REPO/bench/event_cost.c" || die "cannot build bench/event_cost.c"

# The timer is stopped (SIGINT, as Ctrl-C) once both kinds of calls are done;
# its -T only bounds it should this script be killed without its traps.
TIMER_SECONDS=600
TIMER_PG=""
bench_cleanup() { [ -z "$TIMER_PG" ] || kill -TERM -- "-$TIMER_PG" 2>/dev/null; }

ROWS="$OUT/rows.tsv"
: >"$ROWS"
variants=(none timer breakdown)
[ -n "$OTHER" ] && variants+=(other)
echo "== runs (ns of CPU per call)"
for round in $(seq 1 "$ROUNDS"); do
  for variant in "${variants[@]}"; do
    TIMER_PG=""
    if [ "$variant" != none ]; then
      binary=$LATSCOPE
      [ "$variant" = other ] && binary=$OTHER
      breakdown=(--breakdown --collector bpf)
      [ "$variant" = timer ] && breakdown=()
      "$binary" timer -c "$CPU" -p 1000 -P 99 -T "$TIMER_SECONDS" -q "${breakdown[@]}" \
        >"$OUT/$variant-$round.timer.out" 2>"$OUT/$variant-$round.timer.err" &
      TIMER_PG=$!
      sleep 1.5
      kill -0 "$TIMER_PG" 2>/dev/null || die "the timer of $variant ended early (see $OUT/$variant-$round.timer.err)"
    fi
    for kind in timerfd yield; do
      line=$(timeout 60 "$EVENT_COST" "$kind" "$CPU" "$CALLS") || die "event_cost $kind failed"
      read -r _ _ all_ns cheapest_ns <<<"$line"
      printf '%s\t%s\t%s\t%s\t%s\n' "$variant" "$round" "$kind" "$all_ns" "$cheapest_ns" >>"$ROWS"
      printf '%-10s round %s  %-8s %8s ns all calls  %8s ns cheapest chunk\n' "$variant" "$round" "$kind" "$all_ns" "$cheapest_ns"
    done
    if [ -n "$TIMER_PG" ]; then
      kill -0 "$TIMER_PG" 2>/dev/null || die "the timer of $variant ended before the calls did (see $OUT/$variant-$round.timer.err)"
      kill -INT -- "-$TIMER_PG" 2>/dev/null
      timeout 30 tail --pid="$TIMER_PG" -f /dev/null || kill -KILL -- "-$TIMER_PG" 2>/dev/null
      wait "$TIMER_PG" 2>/dev/null
      TIMER_PG=""
    fi
  done
done

echo
echo "== median over the rounds, ns of CPU per call (difference from timer)"
median_of() { # variant kind column
  awk -F'\t' -v v="$1" -v k="$2" -v c="$3" '$1 == v && $3 == k { print $c }' "$ROWS" |
    sort -g | awk '{ d[NR] = $1 } END { if (NR) printf "%.1f", NR % 2 ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2 }'
}
printf '%-8s %-10s %18s %18s\n' kind variant "all calls" "cheapest chunk"
for kind in timerfd yield; do
  for variant in "${variants[@]}"; do
    cells=()
    for column in 4 5; do
      median=$(median_of "$variant" "$kind" "$column")
      base=$(median_of timer "$kind" "$column")
      case $variant in
        none|timer) cells+=("$median") ;;
        *) cells+=("$(awk -v m="$median" -v b="$base" 'BEGIN { printf "%s (%+.1f)", m, m - b }')") ;;
      esac
    done
    printf '%-8s %-10s %18s %18s\n' "$kind" "$variant" "${cells[@]}"
  done
done
echo
echo "files: $OUT"

#!/usr/bin/env bash
# Zero loss of `--trace-spikes` at the highest event rate this machine makes,
# and what the flight recorder's programs cost per event.
#
#   bench/recorder_zero_loss.sh [--seconds S] [--threshold USEC] [--out DIR]
#
# For each collector (bpf, then tracefs), one run of
#   latscope timer --cpus 0,1 -p 20 -P 90 -T S --trace-spikes T --max-latency T
#                  --load hackbench --collector C --json FILE -q
# (a 20 us timer on both CPUs, hackbench beside it) while a bounded SCHED_FIFO
# spinner (priority 95, CPU 1) spins 2 ms every 100 ms to make spikes. Then:
# the samples above T by the histogram (`above_limit`, strictly above, as
# the spikes) against the spikes the trace received (`spikes_seen` +
# `spikes_dropped`), and the kept spikes flagged (`events_lost`).
# For bpf, halfway through the run, `run_time_ns` / `run_cnt` and
# `recursion_misses` of each program (`bpftool prog show`, the figures of
# /proc/PID/fdinfo; kernel.bpf_stats_enabled is set to 1 for the run and
# restored after).
#
# Needs root, jq, python3. Each run is bounded (S + 30 s).
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=""
SECS=10
THRESHOLD=100
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECS=$2; shift 2 ;;
    --threshold) THRESHOLD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--threshold USEC] [--out DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
need jq "apt-get install jq"
need python3 "apt-get install python3"
[ "$(id -u)" = 0 ] || die "needs root (BPF, tracefs, SCHED_FIFO)"
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/recorder-zero-loss.XXXXXX)
mkdir -p "$OUT"
cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" || die "build failed"
BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/latscope"
STATS_BEFORE=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$STATS_BEFORE"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

SPINNER='
import os, sys, time
cpu, seconds = int(sys.argv[1]), float(sys.argv[2])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))
end = time.monotonic() + seconds
while time.monotonic() < end:
    until = time.monotonic() + 0.002
    while time.monotonic() < until:
        pass
    time.sleep(0.098)
'

for collector in bpf tracefs; do
  json="$OUT/$collector.json"
  timeout $((SECS + 30)) "$BIN" timer --cpus 0,1 -p 20 -P 90 -T "$SECS" \
    --trace-spikes "$THRESHOLD" --max-latency "$THRESHOLD" --load hackbench \
    --collector "$collector" --json "$json" -q >"$OUT/$collector.out" 2>&1 &
  pid=$!
  sleep 1
  timeout $((SECS + 5)) python3 -c "$SPINNER" 1 $((SECS - 2)) &
  spinner=$!
  sleep $((SECS / 2))
  if [ "$collector" = bpf ]; then
    # Every latscope_ program loaded now (this run's): bpftool prints
    # run_time_ns and run_cnt while kernel.bpf_stats_enabled is 1.
    bpftool prog show | awk '
      / name latscope_/ {
        name = ""; t = 0; c = 0; m = 0
        for (i = 1; i < NF; i++) {
          if ($i == "name") name = $(i + 1)
          if ($i == "run_time_ns") t = $(i + 1)
          if ($i == "run_cnt") c = $(i + 1)
          if ($i == "recursion_misses") m = $(i + 1)
        }
        printf "%-18s run_cnt %10d  run_time_ns %12d  ns/event %6.1f  recursion_misses %d\n", name, c, t, (c ? t / c : 0), m }
    ' >"$OUT/programs.txt"
  fi
  wait "$spinner" 2>/dev/null
  wait "$pid"
  echo "== collector $collector (exit $?)"
  jq -r '
    .tests[0] as $t |
    ([$t.series[].above_limit] | add) as $above |
    ([$t.series[].samples] | add) as $samples |
    $t.spikes as $s |
    "samples \($samples), above \($s.threshold_ns / 1000) us by the histogram \($above), " +
    "spikes received \($s.spikes_seen) + dropped \($s.spikes_dropped) = \($s.spikes_seen + $s.spikes_dropped), " +
    "kept \($s.spikes | length) of which flagged \([$s.spikes[] | select(.events_lost)] | length), " +
    "events \($s.events_read), lost \($s.events_lost), windows overwritten \($s.windows_overwritten // 0), collector CPU \($s.reader_cpu_ns / 1e6) ms, " +
    "collector \($s.collector.name)"' "$json"
  [ "$collector" = bpf ] && cat "$OUT/programs.txt"
done
echo "outputs in $OUT"

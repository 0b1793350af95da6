#!/usr/bin/env bash
# Zero loss of `--trace-spikes` at the highest event rate this machine makes,
# and what the flight recorder's programs cost per event.
#
#   bench/recorder_zero_loss.sh [--seconds S] [--threshold USEC] [--out DIR]
#                               [--collectors "bpf tracefs"]
#
# For each collector (bpf, then tracefs, or those of --collectors), one run of
#   latscope timer --cpus 0,1 -p 20 -P 90 -T S --trace-spikes T --max-latency T
#                  --load hackbench --collector C --json FILE -q
# (a 20 us timer on both CPUs, hackbench beside it) while a bounded SCHED_FIFO
# spinner (priority 95, CPU 1) spins 2 ms every 100 ms to make spikes. Then:
# the samples above T by the histogram (`above_limit`, strictly above, as
# the spikes) against the spikes the trace received (`spikes_seen` +
# `spikes_dropped`), the kept spikes flagged (`events_lost`), the windows
# overwritten and the events the recorder refused while its ring was full
# of held windows (`events_refused`).
# For bpf, between 1 s into the run and its middle, `run_time_ns` / `run_cnt`
# and the runs per second of each program (`bpftool prog show -j`;
# kernel.bpf_stats_enabled is set to 1 for the run and restored after).
#
# Needs root, jq, bpftool, python3. Each run is bounded (S + 30 s).
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
SECS=10
THRESHOLD=100
COLLECTORS="bpf tracefs"
bench_options "seconds threshold out collectors" "$@"
bench_setup "needs root (BPF, tracefs, SCHED_FIFO)" jq bpftool python3
bpf_stats on

# While a run goes: the spike-making spinner from 1 s on; for bpf, the
# programs' statistics from 1 s in to the middle of the run.
spin_and_snapshot() { # $1 = process group, $2 = run name
  sleep 1
  timer_spinner 1 $((SECS - 2))
  programs_snapshot "$OUT/$2.before.json" "$1"
  sleep $((SECS / 2 - 1 > 0 ? SECS / 2 - 1 : 1))
  programs_snapshot "$OUT/$2.after.json" "$1"
}

for collector in $COLLECTORS; do
  json="$OUT/$collector.json"
  RUN_PROBE=spin_and_snapshot
  run_bounded "$collector" $((SECS + 30)) "$LATSCOPE" timer --cpus 0,1 -p 20 -P 90 -T "$SECS" \
    --trace-spikes "$THRESHOLD" --max-latency "$THRESHOLD" --load hackbench \
    --collector "$collector" --json "$json" -q
  rc=$?
  RUN_PROBE=""
  wait "$SPINNER" 2>/dev/null
  echo "== collector $collector (exit $rc)"
  jq -r '
    .tests[0] as $t |
    ([$t.series[].above_limit] | add) as $above |
    ([$t.series[].samples] | add) as $samples |
    $t.spikes as $s |
    "samples \($samples), above \($s.threshold_ns / 1000) us by the histogram \($above), " +
    "spikes received \($s.spikes_seen) + dropped \($s.spikes_dropped) = \($s.spikes_seen + $s.spikes_dropped), " +
    "kept \($s.spikes | length) of which flagged \([$s.spikes[] | select(.events_lost)] | length), " +
    "events \($s.events_read), lost \($s.events_lost), refused \($s.events_refused // 0), windows overwritten \($s.windows_overwritten // 0), collector CPU \($s.reader_cpu_ns / 1e6) ms, " +
    "collector \($s.collector.name)"' "$json"
  [ "$collector" = bpf ] && program_costs "$OUT/bpf.before.json" "$OUT/bpf.after.json" 2
done
echo "outputs in $OUT"

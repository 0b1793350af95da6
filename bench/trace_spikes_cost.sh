#!/usr/bin/env bash
# What `--trace-spikes` costs the measured latency, for each collector: the
# same test without and with it, in alternating pairs, in the same session.
#
#   bench/trace_spikes_cost.sh [--pairs N] [--seconds S] [--cpu C]
#                              [--threshold USEC] [--tests "timer mq"] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs N pairs (default 8) of each test and collector, each pair "without"
#    then "with" (C = --cpu, default 1; S = --seconds, default 4; T =
#    --threshold, default 50; `--json FILE` is appended to each):
#      timer   latscope timer -c C -p 100 -P 99 -T S -q  [--trace-spikes T --collector bpf|tracefs]
#      mq      latscope mq -a C -p 99 -i 100 -D S -q      [--trace-spikes T --collector bpf|tracefs]
# 3. Prints per run: samples, avg, p99 and max (us), the samples above T the
#    trace saw, the collector that ran, and the trace reader's CPU time; then
#    per test and collector the median over the pairs of the differences
#    (with - without) of avg and p99.
#
# Needs root (the trace), jq. Runs one command at a time; each is bounded
# (S + 30 s) and stopped with its process group on Ctrl-C.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
PAIRS=8
SECS=4
TESTS="timer mq"
CPU=1
THRESHOLD=50
bench_options "pairs seconds cpu threshold tests out" "$@"
bench_setup "--trace-spikes needs root" jq

S=$SECS
declare -A CMD
CMD[timer]="timer -c $CPU -p 100 -P 99 -T $S -q"
CMD[mq]="mq -a $CPU -p 99 -i 100 -D $S -q"

# One line per run: test/collector variant pair samples avg_us p99_us max_us
# spikes collector reader_ms p50_us
ROWS="$OUT/rows.tsv"
: >"$ROWS"
row() {
  local key=$1 variant=$2 pair=$3 json=$4
  jq -r --arg k "$key" --arg v "$variant" --arg p "$pair" '
    .tests[0] as $x | $x.overall as $o |
    [$k, $v, $p, $o.samples, ($o.avg_ns / 1000),
     (($o.percentiles[] | select(.percentile == 99) | .ns) / 1000),
     ($o.max_ns / 1000),
     ($x.spikes.spikes_seen // "-"),
     ($x.spikes.collector.name // "-"),
     (if $x.spikes then ($x.spikes.reader_cpu_ns / 1e6) else "-" end),
     (($o.percentiles[] | select(.percentile == 50) | .ns) / 1000)] | @tsv' "$json" >>"$ROWS"
}

echo "== runs (without, with --trace-spikes $THRESHOLD, alternating; tests: $TESTS)"
for pair in $(seq 1 "$PAIRS"); do
  for test in $TESTS; do
    for collector in bpf tracefs; do
      for variant in without with; do
        name="$test-$collector-$variant-$pair"
        extra=()
        [ "$variant" = with ] && extra=(--trace-spikes "$THRESHOLD" --collector "$collector")
        # shellcheck disable=SC2086
        run_bounded "$name" $((S + 30)) "$LATSCOPE" ${CMD[$test]} "${extra[@]}" --json "$OUT/$name.json" \
          && row "$test/$collector" "$variant" "$pair" "$OUT/$name.json"
      done
    done
  done
done

echo
echo "== per run (us)"
{
  printf 'test/collector\tvariant\tpair\tsamples\tavg\tp99\tmax\tspikes\tran\treader_ms\tp50\n'
  awk -F'\t' '{ printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%s\t%s\t%s\t%.2f\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11 }' "$ROWS"
} | column -t -s $'\t'
echo
echo "== median over the pairs of (with - without), us"
for test in $TESTS; do
  for collector in bpf tracefs; do
    median_diffs "$ROWS" "$test/$collector" 14 "avg:5 p50:11 p99:6"
  done
done
echo
echo "files: $OUT"

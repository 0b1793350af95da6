#!/usr/bin/env bash
# What `timer --breakdown` costs the measured latency, for each collector: the
# timer without and with it, in alternating pairs, in the same session; and
# what each in-kernel program costs per run (kernel.bpf_stats_enabled).
#
#   bench/breakdown_cost.sh [--pairs N] [--seconds S] [--cpu C] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs N pairs (default 8) of each collector, each pair "without" then
#    "with" (C = --cpu, default 1; S = --seconds, default 4):
#      latscope timer -c C -p 100 -P 99 -T S -q        [--breakdown --collector bpf|tracefs]
# 3. During the bpf runs, kernel.bpf_stats_enabled is 1 (it adds about 20 ns
#    per program run, so those runs are not the ones the latency diff should
#    be read from: the script runs one extra, separate bpf run for the
#    per-program cost and keeps the statistics off in the pairs). In that
#    run `bpftool prog show -j`, 1 s in and 1 s before its end, gives each
#    latscope_ program's run_cnt and run_time_ns: the cost per run is the
#    ratio of their growth (bench/lib.sh's program_costs).
# 4. Prints per run: samples, avg, p99, max, p50 (us); per collector the
#    median over the pairs of the differences (with - without) of avg, p50
#    and p99; then the per-program cost.
#
# Needs root, jq and bpftool. Runs one command at a time; each is bounded
# (S + 30 s) and stopped with its process group on Ctrl-C. The sysctl is put
# back as it was on every exit.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
PAIRS=8
SECS=4
CPU=1
bench_options "pairs seconds cpu out" "$@"
bench_setup "--breakdown needs root" jq bpftool

S=$SECS
BASE="timer -c $CPU -p 100 -P 99 -T $S -q"
ROWS="$OUT/rows.tsv"
: >"$ROWS"
row() {
  local collector=$1 variant=$2 pair=$3 json=$4
  jq -r --arg c "$collector" --arg v "$variant" --arg p "$pair" '
    .tests[0].overall as $o |
    [$c, $v, $p, $o.samples, ($o.avg_ns / 1000),
     (($o.percentiles[] | select(.percentile == 99) | .ns) / 1000),
     ($o.max_ns / 1000),
     (($o.percentiles[] | select(.percentile == 50) | .ns) / 1000)] | @tsv' "$json" >>"$ROWS"
}

bpf_stats off
echo "== runs (without, with --breakdown, alternating; bpf statistics off)"
for pair in $(seq 1 "$PAIRS"); do
  for collector in bpf tracefs; do
    for variant in without with; do
      name="$collector-$variant-$pair"
      extra=()
      [ "$variant" = with ] && extra=(--breakdown --collector "$collector")
      # shellcheck disable=SC2086
      run_bounded "$name" $((S + 30)) "$LATSCOPE" $BASE "${extra[@]}" --json "$OUT/$name.json" \
        && row "$collector" "$variant" "$pair" "$OUT/$name.json"
    done
  done
done

echo
echo "== per run (us)"
{
  printf 'collector\tvariant\tpair\tsamples\tavg\tp99\tmax\tp50\n'
  awk -F'\t' '{ printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%.2f\n", $1,$2,$3,$4,$5,$6,$7,$8 }' "$ROWS"
} | column -t -s $'\t'
echo
echo "== median over the pairs of (with - without), us"
for collector in bpf tracefs; do
  median_diffs "$ROWS" "$collector" 8 "avg:5 p50:8 p99:6"
done

echo
echo "== in-kernel cost per program run (kernel.bpf_stats_enabled=1, one run)"
bpf_stats on
RUN_PROBE=snapshot_programs
# shellcheck disable=SC2086
run_bounded bpf-stats $((S + 30)) "$LATSCOPE" $BASE --breakdown --collector bpf --json "$OUT/bpf-stats.json"
RUN_PROBE=""
bpf_stats_restore
program_costs "$OUT/bpf-stats.before.json" "$OUT/bpf-stats.after.json" 1
echo
echo "files: $OUT"

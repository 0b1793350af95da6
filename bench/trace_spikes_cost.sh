#!/usr/bin/env bash
# What `--trace-spikes` costs the measured latency: the same test without and
# with it, alternating, in the same session.
#
#   bench/trace_spikes_cost.sh [--pairs N] [--seconds S] [--cpu C]
#                              [--threshold USEC] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs N pairs (default 3) of each test, each pair "without" then "with"
#    (C = --cpu, default 1; S = --seconds, default 10; T = --threshold,
#    default 50; `--json FILE` is appended to each):
#      timer   latscope timer -c C -p 100 -P 99 -T S -q            [--trace-spikes T]
#      mq      latscope mq -a C -p 99 -i 100 -D S -q                [--trace-spikes T]
# 3. Prints per run: samples, avg, p99 and max (us), the samples above T the
#    trace saw, and the trace reader's CPU time; then per test the mean avg
#    and p99 without and with, and their difference (with - without).
#
# Needs root (the trace), jq. Runs one command at a time; each is bounded
# (S + 30 s) and stopped with its process group on Ctrl-C.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=""
PAIRS=3
SECONDS_EACH=10
CPU=1
THRESHOLD=50
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --cpu) CPU=$2; shift 2 ;;
    --threshold) THRESHOLD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--pairs N] [--seconds S] [--cpu C] [--threshold USEC] [--out DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
need jq "apt-get install jq"
[ "$(id -u)" = 0 ] || die "--trace-spikes needs root"
bench_out_dir
print_machine
build_latscope 900

S=$SECONDS_EACH
declare -A CMD
CMD[timer]="timer -c $CPU -p 100 -P 99 -T $S -q"
CMD[mq]="mq -a $CPU -p 99 -i 100 -D $S -q"

# One line per run: test variant pair samples avg_us p99_us max_us spikes reader_ms
ROWS="$OUT/rows.tsv"
: >"$ROWS"
row() {
  local test=$1 variant=$2 pair=$3 json=$4
  jq -r --arg t "$test" --arg v "$variant" --arg p "$pair" '
    .tests[0] as $x | $x.overall as $o |
    [$t, $v, $p, $o.samples, ($o.avg_ns / 1000),
     (($o.percentiles[] | select(.percentile == 99) | .ns) / 1000),
     ($o.max_ns / 1000),
     ($x.spikes.spikes_seen // "-"),
     (if $x.spikes then ($x.spikes.reader_cpu_ns / 1e6) else "-" end)] | @tsv' "$json" >>"$ROWS"
}

echo "== runs (without, with --trace-spikes $THRESHOLD, alternating)"
for pair in $(seq 1 "$PAIRS"); do
  for test in timer mq; do
    for variant in without with; do
      name="$test-$variant-$pair"
      extra=()
      [ "$variant" = with ] && extra=(--trace-spikes "$THRESHOLD")
      # shellcheck disable=SC2086
      run_bounded "$name" $((S + 30)) "$LATSCOPE" ${CMD[$test]} "${extra[@]}" --json "$OUT/$name.json" \
        && row "$test" "$variant" "$pair" "$OUT/$name.json"
    done
  done
done

echo
echo "== per run (us)"
{
  printf 'test\tvariant\tpair\tsamples\tavg\tp99\tmax\tspikes\treader_ms\n'
  awk -F'\t' '{ printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%s\t%s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9 }' "$ROWS"
} | column -t -s $'\t'
echo
echo "== mean over the pairs (us): with - without"
awk -F'\t' '
  { n[$1" "$2]++; avg[$1" "$2] += $5; p99[$1" "$2] += $6 }
  END {
    for (t in n) split(t, k, " ")
    split("timer mq", tests, " ")
    printf "%-6s %12s %12s %10s %12s %12s %10s\n", "test", "avg without", "avg with", "diff", "p99 without", "p99 with", "diff"
    for (i = 1; i <= 2; i++) {
      a = tests[i] " without"; b = tests[i] " with"
      if (!n[a] || !n[b]) continue
      printf "%-6s %12.2f %12.2f %+10.2f %12.2f %12.2f %+10.2f\n", tests[i],
        avg[a]/n[a], avg[b]/n[b], avg[b]/n[b] - avg[a]/n[a],
        p99[a]/n[a], p99[b]/n[b], p99[b]/n[b] - p99[a]/n[a]
    }
  }' "$ROWS"
echo
echo "files: $OUT"

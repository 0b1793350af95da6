#!/usr/bin/env bash
# The observer effect of in-kernel collection on the measured wake-up
# (issue 39 item 7): the timer alone and with each way of watching it, in
# rounds of five configurations whose order rotates from round to round, so
# that a drift of the machine's load falls on every configuration alike.
#
#   bench/observer_effect.sh [--pairs N] [--seconds S] [--cpu C] [--out DIR]
#
# 1. Builds latscope in release mode (or takes LATSCOPE_BIN).
# 2. N rounds (--pairs, default 10) of the five configurations
#    (C = --cpu, default 1; S = --seconds, default 4):
#      baseline         latscope timer -c C -p 100 -P 99 -T S -q
#      spikes-bpf       ... --trace-spikes 50 --collector bpf
#      spikes-tracefs   ... --trace-spikes 50 --collector tracefs
#      breakdown-bpf    ... --breakdown --collector bpf
#      breakdown-tracefs ... --breakdown --collector tracefs
#    round r starts with configuration r mod 5 and goes round the list.
# 3. Prints per run samples, avg, p50, p99, max (us); then per configuration
#    the median over the rounds of (configuration - baseline of the same
#    round), for avg and p50.
#
# Needs root and jq. Runs one command at a time; each is bounded (S + 30 s)
# and stopped with its process group on Ctrl-C.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
PAIRS=10
SECS=4
CPU=1
bench_options "pairs seconds cpu out" "$@"
bench_setup "--breakdown and --trace-spikes need root" jq

BASE="timer -c $CPU -p 100 -P 99 -T $SECS -q"
CONFIGS=(baseline spikes-bpf spikes-tracefs breakdown-bpf breakdown-tracefs)
options_of() {
  case $1 in
    baseline) ;;
    spikes-*) echo "--trace-spikes 50 --collector ${1#spikes-}" ;;
    breakdown-*) echo "--breakdown --collector ${1#breakdown-}" ;;
  esac
}
ROWS="$OUT/rows.tsv"
: >"$ROWS"
echo "== runs ($PAIRS rounds of ${#CONFIGS[@]} configurations, order rotating)"
for round in $(seq 1 "$PAIRS"); do
  for k in $(seq 0 $((${#CONFIGS[@]} - 1))); do
    config=${CONFIGS[$(((round + k) % ${#CONFIGS[@]}))]}
    name="$config-$round"
    # shellcheck disable=SC2046,SC2086
    run_bounded "$name" $((SECS + 30)) "$LATSCOPE" $BASE $(options_of "$config") --json "$OUT/$name.json" \
      && jq -r --arg c "$config" --arg r "$round" '
        .tests[0].overall as $o |
        [$c, $r, $o.samples, ($o.avg_ns / 1000),
         (($o.percentiles[] | select(.percentile == 50) | .ns) / 1000),
         (($o.percentiles[] | select(.percentile == 99) | .ns) / 1000),
         ($o.max_ns / 1000)] | @tsv' "$OUT/$name.json" >>"$ROWS"
  done
done

echo
echo "== per run (us)"
{
  printf 'config\tround\tsamples\tavg\tp50\tp99\tmax\n'
  awk -F'\t' '{ printf "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f\n", $1,$2,$3,$4,$5,$6,$7 }' "$ROWS"
} | column -t -s $'\t'
echo
echo "== median over the rounds of (configuration - baseline of the round), us"
for config in "${CONFIGS[@]:1}"; do
  for what in avg:4 p50:5; do
    awk -F'\t' -v c="$config" -v col="${what#*:}" '
      { v[$1" "$2] = $col; rounds[$2] = 1 }
      END { for (r in rounds) if (((c " " r) in v) && (("baseline " r) in v)) print v[c " " r] - v["baseline " r] }' "$ROWS" |
      sort -g | awk -v c="$config" -v w="${what%%:*}" '
        { d[NR] = $1 }
        END {
          if (NR == 0) { printf "%-18s %s: - (0 rounds)\n", c, w; exit }
          m = (NR % 2) ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2
          printf "%-18s %s: %+.2f (%d rounds, from %+.2f to %+.2f)\n", c, w, m, NR, d[1], d[NR]
        }'
  done
done
echo
echo "files: $OUT"

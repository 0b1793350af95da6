#!/usr/bin/env bash
# Physics side by side for kernel CI's two rt-tests programs: latscope's
# pi_stress and rt-migrate-test against Debian's, run as Linaro's
# test-definitions run them, in alternating pairs (original, latscope,
# original, latscope, ...).
#
#   bench/kernelci_side_by_side.sh [--pairs N] [--seconds D] [--prio P]
#
# Per pair (default 5 pairs, D 10 s, P 51):
#   pi_stress -q --duration D --json=FILE
#     inversions per second = the JSON's `inversion` over the run's wall time
#     (measured here: pi_stress ends between D and D + 1.75 s, a 0.75 s
#     report after the second D has passed, so the count alone is no rate);
#   rt-migrate-test -q -p P -D D -c --json=FILE
#     the per-task averages (the JSON's thread.<i>.avg, us from the release
#     to the task's start) and the check's return_code.
# It prints per pair the ratio latscope/original of the inversions per
# second and of every task's average, then the median ratio over the pairs
# (the goal: within 5 %, i.e. 0.95 .. 1.05). A pair's two runs share the
# machine's state of the moment; the median keeps one noisy pair from
# moving the verdict. The load average is printed: on a machine shared with
# other work the figures are that machine's.
#
# The originals come from $RTBIN (default /usr/bin, Debian's rt-tests);
# latscope from $LATSCOPE (default target/release/latscope, or
# $CARGO_TARGET_DIR/release/latscope; build it first), each through a link
# named like the original. Needs root (SCHED_FIFO). Output: $OUT (default a
# fresh /tmp/kernelci-side-by-side.XXXXXX, kept).

set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
LATSCOPE=${LATSCOPE:-${CARGO_TARGET_DIR:-$REPO/target}/release/latscope}
RTBIN=${RTBIN:-/usr/bin}
PAIRS=5 SECS=10 PRIO=51
usage() { echo "usage: $0 [--pairs N] [--seconds D] [--prio P]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --pairs) PAIRS=$2 ;;
    --seconds) SECS=$2 ;;
    --prio) PRIO=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for n in "$PAIRS" "$SECS" "$PRIO"; do
  case $n in '' | *[!0-9]*) usage ;; esac
done
[ "$(id -u)" = 0 ] || { echo "error: run as root (the tools need SCHED_FIFO)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || { echo "error: $LATSCOPE not built (cargo build --release, or set LATSCOPE)" >&2; exit 1; }
for tool in pi_stress rt-migrate-test; do
  [ -x "$RTBIN/$tool" ] || { echo "error: $RTBIN/$tool not found (apt-get install rt-tests)" >&2; exit 1; }
done
OUT=${OUT:-$(mktemp -d /tmp/kernelci-side-by-side.XXXXXX)}
mkdir -p "$OUT/real" "$OUT/ours"
for tool in pi_stress rt-migrate-test; do
  ln -sfn "$RTBIN/$tool" "$OUT/real/$tool"
  ln -sfn "$LATSCOPE" "$OUT/ours/$tool"
done

echo "== machine: nproc $(nproc), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $PAIRS pairs of $SECS s, rt-migrate-test -p $PRIO; output in $OUT"

# one_run SIDE NAME OK TOOL ARGS...: runs SIDE's TOOL (bounded in time, its
# output kept in $OUT/NAME.*), the wall time in $OUT/NAME.wall; an exit
# status not in OK (space separated) stops the script.
one_run() {
  local side=$1 name=$2 ok=" $3 " tool=$4 t0 t1 rc=0
  shift 4
  t0=$EPOCHREALTIME
  timeout -k 5 $((SECS * 3 + 30)) "$OUT/$side/$tool" "$@" --json="$OUT/$name.json" \
    >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?
  t1=$EPOCHREALTIME
  echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >"$OUT/$name.wall"
  if [[ $ok != *" $rc "* ]]; then
    echo "error: $side $tool exited $rc (see $OUT/$name.err)" >&2
    exit 1
  fi
}

# Rows: "pi PAIR SIDE inversions wall" and "mig PAIR SIDE return_code avg0 avg1 ...".
ROWS=$OUT/rows
: >"$ROWS"
for k in $(seq 1 "$PAIRS"); do
  for side in real ours; do
    one_run "$side" "pi-$side-$k" 0 pi_stress -q --duration "$SECS"
    echo "pi $k $side $(jq .inversion "$OUT/pi-$side-$k.json") $(cat "$OUT/pi-$side-$k.wall")" >>"$ROWS"
  done
  for side in real ours; do
    # rt-migrate-test: 1 when -D (its alarm) ended the loops, 255 when the
    # check failed: results, not failures to run.
    one_run "$side" "mig-$side-$k" "0 1 255" rt-migrate-test -q -p "$PRIO" -D "$SECS" -c
    echo "mig $k $side $(jq -r '[.return_code] + [.thread | to_entries | sort_by(.key | tonumber)[] | .value.avg] | map(tostring) | join(" ")' \
      "$OUT/mig-$side-$k.json")" >>"$ROWS"
  done
  echo "pair $k done (load average $(cut -d' ' -f1 /proc/loadavg))"
done

python3 - "$ROWS" <<'EOF'
import statistics, sys
pi, mig = {}, {}
for line in open(sys.argv[1]):
    kind, pair, side, *v = line.split()
    if kind == "pi":
        pi.setdefault(int(pair), {})[side] = int(v[0]) / float(v[1])
    else:
        mig.setdefault(int(pair), {})[side] = (int(v[0]), [float(x) for x in v[1:]])

def ratio(ours, real):
    return ours / real if real else float("nan")

print()
print("pi_stress: inversions per second (the JSON's inversion / wall time)")
print("%-5s %12s %12s %8s" % ("pair", "pi_stress", "latscope", "ratio"))
pi_ratios = []
for pair in sorted(pi):
    real, ours = pi[pair]["real"], pi[pair]["ours"]
    pi_ratios.append(ratio(ours, real))
    print("%-5d %12.0f %12.0f %8.3f" % (pair, real, ours, pi_ratios[-1]))
print("median ratio: %.3f" % statistics.median(pi_ratios))

print()
print("rt-migrate-test: per-task Avg (us, the JSON's thread.<i>.avg); rc = return_code")
tasks = len(next(iter(mig.values()))["real"][1])
per_task = [[] for _ in range(tasks)]
for pair in sorted(mig):
    (rc_r, real), (rc_o, ours) = mig[pair]["real"], mig[pair]["ours"]
    ratios = [ratio(o, r) for o, r in zip(ours, real)]
    for t, r in enumerate(ratios):
        per_task[t].append(r)
    print("pair %d: original rc %d %s | latscope rc %d %s | ratios %s" % (
        pair, rc_r, " ".join("%g" % a for a in real), rc_o,
        " ".join("%g" % a for a in ours), " ".join("%.3f" % r for r in ratios)))
print("median ratio per task: " + " ".join(
    "task %d %.3f" % (t, statistics.median(r)) for t, r in enumerate(per_task)))
EOF

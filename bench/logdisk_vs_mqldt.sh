#!/usr/bin/env bash
# Compare `latscope logdisk` with IBM's mqldt, the tool it replaces, on this
# machine's disk: the same arguments, shuffled rounds, IOPS as ratios.
#
#   bench/logdisk_vs_mqldt.sh [--dir DIR] [--duration S] [--rounds N]
#                             [--bsize LIST] [--file-size BYTES] [--num-files N]
#                             [--mqldt-src DIR] [--latscope BIN] [--baseline BIN]
#                             [--cross] [--rt PRIO] [--out DIR]
#
# 1. Builds mqldt from its reference source (--mqldt-src, default
#    ../shared/ref/mqldt next to the repository) into a temporary directory
#    (gcc -O2 -D_GNU_SOURCE ... -lpthread -lm -lrt, as ../shared/ref/README.md
#    says), and latscope in release mode (cargo build --release; --latscope BIN
#    uses BIN instead). --baseline BIN adds another latscope build (e.g. main's)
#    as a third tool, "baseline", to see a change and the original in the same
#    rounds.
# 2. Creates a fresh scratch directory DIR/latscope-mqldt-bench.XXXXXX (DIR
#    default: the repository's target/, i.e. the repository's filesystem; tmpfs
#    and ramfs are refused).
# 3. Round 1..N (default 6): every (block size, tool) of the round in an order
#    shuffled anew each round (shuf), each with the same arguments (mqldt's
#    spelling, which latscope accepts; sizes in K, as mqldt wants them):
#      mqldt-ref --dir=D --bsize=B --fileSize=SIZE --numFiles=F --duration=S
#      latscope logdisk --format classic -q --dir D --bsize B --fileSize SIZE
#                       --numFiles F --duration S
#    (defaults: --bsize 4K,64K,1024K, --file-size 16777216, --num-files 2,
#    --duration 3: the figures of issue 32 item 15). Each run creates its files
#    afresh and writes them out to full size before measuring (each tool its
#    own way); mqldt never removes its files, the script does after each of its
#    runs; latscope removes its own, and the script says so if it did not.
#    IOPS and the average write latency come from the two tools' identical
#    "IOPS" and "Avg latency of write (ns)" lines (writes / whole seconds asked
#    for, as mqldt computes it).
# 4. --cross (a diagnostic: the file layout or the write loop?): instead of the
#    tools on their own files, four variants MEASURER@LAYOUT: a 1-second run of
#    LAYOUT (mqldt, or latscope --keep) creates and writes out the files, then
#    MEASURER runs on them (latscope with --reuse; mqldt reuses files of the
#    right size by itself). latscope@mqldt against mqldt@mqldt is then the
#    write loop alone, mqldt@latscope against mqldt@mqldt the layout alone.
# 5. --rt PRIO runs both tools under `chrt -f PRIO` (SCHED_FIFO; root). On a
#    machine whose CPUs others keep busy (builds), a writer woken by its
#    completed write otherwise waits for a CPU, up to a 4 ms tick, and both
#    tools measure that wait, not the disk (docs/benchmarks.md, part 4: about
#    200 IOPS instead of thousands). The same for both tools: fair.
# 6. Prints every run's IOPS and average latency as it ends, then per block
#    size: each round's IOPS per tool, the median IOPS per tool, and per tool
#    against mqldt (mqldt@mqldt with --cross) the ratio of the medians and the
#    median of the per-round ratios (the two runs of a round are minutes apart
#    at most, the machine's drift between rounds cancels).
#
# Needs gcc, awk, shuf, cargo (unless --latscope); no root needed unless DIR
# requires it. Bounded in time: every command runs under `timeout` (the build
# 900 s, each run the duration + 60 s), in its own process group, stopped on
# exit, Ctrl-C or SIGTERM; the scratch directory with every test file in it and
# the mqldt build are removed then too. Every command is printed (prefixed with
# "+"). Raw outputs are kept in the output directory (--out, default a fresh
# /tmp/latscope-bench.XXXXXX). About rounds x sizes x tools x (duration + 1 s)
# plus the build: 2.5 min with the defaults, 6 min with --cross.
# Shared functions: bench/lib.sh.

DIR=""
DURATION=3
ROUNDS=6
BSIZES="4K,64K,1024K"
FILE_SIZE=16777216
NUM_FILES=2
MQLDT_SRC=""
LATSCOPE_BIN=""
BASELINE=""
CROSS=""
RT=""
OUT=""
BUILD_TIMEOUT=900
PREFIX=mqldt_testfile   # both tools' default --filePrefix

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--dir DIR a directory
--duration DURATION seconds
--rounds ROUNDS a number
--bsize BSIZES a list such as 4K,64K
--file-size FILE_SIZE bytes
--num-files NUM_FILES a number
--mqldt-src MQLDT_SRC a directory
--latscope LATSCOPE_BIN a binary
--baseline BASELINE a binary
--cross CROSS=1
--rt RT a SCHED_FIFO priority
--out OUT a directory
" "$@"

whole_numbers "--rounds, --duration, --num-files and --file-size" "$ROUNDS" "$DURATION" "$NUM_FILES" "$FILE_SIZE"
if [ "$ROUNDS" -lt 1 ] || [ "$DURATION" -lt 1 ] || [ "$NUM_FILES" -lt 1 ]; then
  echo "--rounds, --duration and --num-files must be at least 1" >&2; exit 2
fi
IFS=, read -r -a BLIST <<<"$BSIZES"
for b in "${BLIST[@]}"; do
  # mqldt takes only <n>k; the file must hold a write.
  if ! [[ "$b" =~ ^[0-9]+[kK]$ ]] || [ $((${b%[kK]} * 1024)) -gt "$FILE_SIZE" ] || [ "${b%[kK]}" -lt 1 ]; then
    echo "--bsize: '$b' is not <n>K up to --file-size (mqldt wants sizes in K: 1024K, not 1M)" >&2; exit 2
  fi
done
[ -n "$BASELINE" ] && { [ -x "$BASELINE" ] || die "--baseline $BASELINE is not an executable"; }
RUN_TIMEOUT=$((DURATION + 60))
RT_CMD=()
if [ -n "$RT" ]; then
  case "$RT" in *[!0-9]*) echo "--rt takes a priority 1..99" >&2; exit 2 ;; esac
  need chrt "util-linux"
  RT_CMD=(chrt -f "$RT")
fi

need gcc
need awk
need shuf "coreutils"
need timeout "coreutils"
[ -n "$LATSCOPE_BIN" ] || need cargo
bench_out_dir

[ -n "$MQLDT_SRC" ] || MQLDT_SRC="$REPO/../shared/ref/mqldt"
[ -f "$MQLDT_SRC/mqldt.c" ] || die "no mqldt source in $MQLDT_SRC (--mqldt-src)"
[ -n "$DIR" ] || { DIR="$REPO/target"; mkdir -p "$DIR" || die "cannot create $DIR"; }
disk_scratch "$DIR" latscope-mqldt-bench
MQLDT_DIR=$(mktemp -d /tmp/mqldt-build.XXXXXX) || die "mktemp failed"
# shellcheck disable=SC2317  # called by lib.sh's exit trap
bench_cleanup() { rm -rf -- "$MQLDT_DIR"; }

echo "== build"
MQLDT="$MQLDT_DIR/mqldt-ref"
run_bounded mqldt-build 120 gcc -O2 -D_GNU_SOURCE -o "$MQLDT" "$MQLDT_SRC"/*.c -lpthread -lm -lrt \
  || die "mqldt build failed (see $OUT/mqldt-build.err)"
if [ -n "$LATSCOPE_BIN" ]; then
  [ -x "$LATSCOPE_BIN" ] || die "--latscope $LATSCOPE_BIN is not an executable"
  LATSCOPE=$LATSCOPE_BIN
else
  build_latscope "$BUILD_TIMEOUT"
fi
print_machine
echo "== test directory"
echo "directory: $SCRATCH ($SCRATCH_FS, mounted on $(findmnt -n -o TARGET --target "$SCRATCH" 2>/dev/null || echo '?') with $(findmnt -n -o OPTIONS --target "$SCRATCH" 2>/dev/null || echo '?'))"
echo "latscope: $LATSCOPE${BASELINE:+, baseline: $BASELINE}; mqldt: $MQLDT_SRC"
echo "pattern: $NUM_FILES files x $FILE_SIZE bytes, ${DURATION} s per run, block sizes ${BLIST[*]}, $ROUNDS rounds${CROSS:+, cross layouts}${RT:+, SCHED_FIFO $RT}"
echo

# ---------------------------------------------------------------- runs
# tool_cmd TOOL SECONDS [EXTRA...]: the command line of TOOL (mqldt, latscope,
# baseline) for block size $BS, in the array CMD.
tool_cmd() {
  local tool=$1 secs=$2
  shift 2
  case "$tool" in
    mqldt) CMD=("${RT_CMD[@]}" "$MQLDT" --dir="$SCRATCH" --bsize="$BS" --fileSize="$FILE_SIZE"
                --numFiles="$NUM_FILES" --duration="$secs") ;;
    latscope|baseline)
      local bin=$LATSCOPE
      [ "$tool" = baseline ] && bin=$BASELINE
      CMD=("${RT_CMD[@]}" "$bin" logdisk --format classic -q --dir "$SCRATCH" --bsize "$BS" --fileSize "$FILE_SIZE"
           --numFiles "$NUM_FILES" --duration "$secs" "$@") ;;
  esac
}

# The test files both tools name PREFIX.NNNN: mqldt's stay after its runs.
remove_test_files() { rm -f -- "$SCRATCH/$PREFIX".[0-9][0-9][0-9][0-9]; }

# figure NAME LABEL: the number on the line of $OUT/NAME.out starting with
# LABEL, thousands separators dropped (both tools print mqldt's lines).
figure() {
  awk -F: -v l="$2" 'index($0, l) == 1 { gsub(/[^0-9]/, "", $2); print $2; exit }' "$OUT/$1.out"
}

ROWS="$OUT/rows.tsv"   # round, block size, variant, IOPS, avg latency ns, load1
: >"$ROWS"
failed=0

# measure ROUND VARIANT: one measured run; VARIANT is a tool, or with --cross
# MEASURER@LAYOUT (a 1 s run of LAYOUT lays the files out first).
measure() {
  local round=$1 variant=$2 name tool layout load iops avg
  name="$variant-$BS-$round"
  name=${name//@/-on-}
  tool=${variant%@*}
  empty_scratch "before $name"
  if [ "$variant" != "$tool" ]; then
    layout=${variant#*@}
    if [ "$layout" = mqldt ]; then tool_cmd mqldt 1; else tool_cmd "$layout" 1 --keep; fi
    run_bounded "$name-layout" "$RUN_TIMEOUT" "${CMD[@]}" || { failed=1; remove_test_files; return 1; }
    if [ "$tool" = mqldt ]; then tool_cmd mqldt "$DURATION"; else tool_cmd "$tool" "$DURATION" --reuse; fi
  else
    tool_cmd "$tool" "$DURATION"
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  run_bounded "$name" "$RUN_TIMEOUT" "${CMD[@]}" || failed=1
  # mqldt's files, and any reused or kept, are expected; latscope's own must be
  # gone after its run (empty_scratch names what is left).
  if [ "$variant" != "$tool" ] || [ "$tool" = mqldt ]; then remove_test_files; fi
  empty_scratch "after $name"
  iops=$(figure "$name" IOPS)
  avg=$(figure "$name" "Avg latency of write (ns)")
  [ -n "$iops" ] && [ -n "$avg" ] || { echo "  !! no IOPS or average in $OUT/$name.out" >&2; failed=1; return 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$BS" "$variant" "$iops" "$avg" "$load" >>"$ROWS"
  printf '  round %s %6s %-18s IOPS %7s  avg %9s ns  (load %s)\n' "$round" "$BS" "$variant" "$iops" "$avg" "$load"
}

if [ -n "$CROSS" ]; then
  VARIANTS=(mqldt@mqldt latscope@mqldt mqldt@latscope latscope@latscope)
  REF=mqldt@mqldt
else
  VARIANTS=(mqldt latscope)
  [ -z "$BASELINE" ] || VARIANTS+=(baseline)
  REF=mqldt
fi

echo "== runs: $ROUNDS rounds of ${#BLIST[@]} sizes x ${#VARIANTS[@]} variants, shuffled within each round"
for round in $(seq 1 "$ROUNDS"); do
  for job in $(for BS in "${BLIST[@]}"; do for v in "${VARIANTS[@]}"; do echo "$BS/$v"; done; done | shuf); do
    BS=${job%%/*}
    measure "$round" "${job#*/}"
  done
done
echo

# ---------------------------------------------------------------- report
echo "== results: IOPS per round (average write latency in us in brackets)"
for BS in "${BLIST[@]}"; do
  echo "-- $BS writes"
  awk -F'\t' -v bs="$BS" -v ref="$REF" -v list="${VARIANTS[*]}" '
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $2 == bs { io[$1, $3] = $4; av[$1, $3] = $5; rounds[$1] = 1 }
    END {
      nv = split(list, v, " ")
      printf "%-6s", "round"; for (k = 1; k <= nv; k++) printf " %22s", v[k]; print ""
      nr = 0; for (r in rounds) rl[++nr] = r + 0
      for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rl[j] < rl[i]) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
      for (i = 1; i <= nr; i++) {
        r = rl[i]; printf "%-6s", r
        for (k = 1; k <= nv; k++)
          printf " %22s", ((r SUBSEP v[k]) in io) ? sprintf("%d [%.1f]", io[r, v[k]], av[r, v[k]] / 1000) : "-"
        print ""
      }
      for (k = 1; k <= nv; k++) {
        n = 0; m = 0; delete x; delete y
        for (i = 1; i <= nr; i++) {
          r = rl[i]
          if ((r SUBSEP v[k]) in io) x[++n] = io[r, v[k]]
          if (((r SUBSEP v[k]) in io) && ((r SUBSEP ref) in io) && io[r, ref] > 0) y[++m] = io[r, v[k]] / io[r, ref]
        }
        med[v[k]] = n ? median(x, n) : 0; pr[v[k]] = m ? median(y, m) : 0; cnt[v[k]] = m
      }
      printf "%-6s", "median"; for (k = 1; k <= nv; k++) printf " %22.0f", med[v[k]]; print ""
      for (k = 1; k <= nv; k++) if (v[k] != ref && med[ref] > 0)
        printf "%s / %s: ratio of the medians %.3f, median of the %d per-round ratios %.3f\n",
          v[k], ref, med[v[k]] / med[ref], cnt[v[k]], pr[v[k]]
    }' "$ROWS"
  echo
done

echo "raw outputs: $OUT (rows.tsv: round, block size, variant, IOPS, avg ns, load)"
exit "$failed"

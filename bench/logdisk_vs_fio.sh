#!/usr/bin/env bash
# Compare `latscope logdisk` with fio doing the same synchronous log writes on
# this machine's disk.
#
#   bench/logdisk_vs_fio.sh [--dir DIR] [--duration S] [--runs N] [--bsize LIST]
#                           [--file-size SIZE] [--num-files N]
#                           [--fio-engine ENGINE] [--nice N] [--redo N]
#                           [--max-others F] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Creates a fresh scratch directory DIR/latscope-logdisk-bench.XXXXXX
#    (DIR default: the repository's target/, i.e. the repository's filesystem;
#    tmpfs and ramfs are refused: this compares a disk). Both tools write there.
# 3. For run 1..N (default 3), for each block size of --bsize (default 4K,64K):
#    latscope, then fio, with the same pattern: F files (--num-files, default 2)
#    of SIZE bytes (--file-size, default 16M), opened O_DSYNC|O_DIRECT, each
#    written out to full size before the measurement starts, then one write of
#    the block size at a time, sequentially through the files, wrapping, for
#    S seconds (--duration, default 10):
#      latscope logdisk --dir D --bsize B --fileSize SIZE --numFiles F
#                       --duration S -q --json FILE
#      fio --name=log --directory=D --rw=write --ioengine=vsync --direct=1
#          --sync=dsync --bs=B --iodepth=1 --nrfiles=F --filesize=SIZE
#          --file_service_type=sequential --overwrite=1 --unlink=1 --time_based
#          --runtime=S --lat_percentiles=1 --output-format=json --output=FILE
#    (fio's usual emulation of mqldt's pattern, plus --directory, and
#    --unlink=1 so that fio, like latscope, removes its files at the end).
#    Each run of each tool creates its files afresh and removes them; the
#    script checks that the directory is empty before and after every run.
#    --fio-engine psync makes fio write with pwrite, as latscope does (a
#    diagnostic: vsync issues lseek + writev per write, see below).
#    --nice N runs both tools under `nice -n N` (N < 0 needs root).
# 4. A shared machine: while other work keeps the CPUs busy, a writer woken by
#    its completed write can wait for a CPU, and both tools then measure that
#    wait, not the disk. The script measures the CPU time everything else used
#    during each run ("others" below); when, in either run of a pair (latscope
#    and fio, one block size, one run number), it exceeds F x NCPU x the run's
#    wall time (--max-others, default 0.3), or the device completed more flush
#    requests than 1.05 per measured write + 64 (each measured write makes
#    one flush; more come from another program's synchronous writes),
#    the pair is run again, up to --redo times (default 3; 0: never). Both
#    criteria are taken outside the tools and drop both runs of the pair.
#    Dropped pairs are listed with their figures and their outputs kept
#    (NAME-redoK); a pair still disturbed after the last attempt is kept and
#    marked.
# 5. Prints per block size, per run and tool: writes, IOPS, MB/s (10^6 bytes),
#    avg / p50 / p99 / max / min latency, CPU time per write, the block device's
#    write and flush requests per write, the CPU time everything else used during
#    the run, the load average; the ratios latscope / fio of each run pair; a
#    mark on runs whose median latency is over 1.5 x the lowest (disturbed?);
#    then the verdict per goal over all runs: IOPS and bandwidth at least 0.98
#    of fio's, avg latency within 5 % of fio's; with, for each, the run pairs'
#    ratios: range, geometric mean and 95 % confidence interval, and whether
#    that interval lies inside the goal, outside it, or across it (then these
#    runs cannot tell: the disk's speed drifts between runs by more than 2 %).
#
# Where the figures come from:
#   latscope: its JSON, tests[0].series[0]: detail.writes, detail.iops,
#             detail.bytes_per_s, detail.duration_s (from the first write's
#             start to the last write's end), avg_ns, min_ns, max_ns,
#             percentiles[] (HDR, < 0.1 % error). One sample = the pwrite call.
#   fio:      its JSON, jobs[0].write: total_ios, iops, bw_bytes, runtime (ms),
#             lat_ns.{mean,min,max,percentile} (lat = from after the I/O was
#             prepared to its completion; for vsync that spans fio's queueing,
#             the lseek and the writev), clat_ns.mean (shown for reference).
#             fio's percentiles are bucket midpoints (64 buckets per power of
#             two: within 0.8 %).
#   CPU:      user + system time of the whole tool (bash `times`), layout
#             included, divided by the measured writes.
#   device:   write and flush requests completed by the directory's block
#             device (/sys/class/block/DEV/stat) during the run, layout
#             included: one flush per write shows that each write was made
#             durable; far more writes than the tool's means someone else wrote.
#   others:   NCPU x wall time - idle time (/proc/stat idle + iowait, exact
#             with tickless idle) - the tool's CPU time: other load on the CPUs.
#
# Needs fio and jq (apt-get install fio jq), awk, cargo; no root needed unless
# DIR requires it.
#
# Bounded in time: every command runs under `timeout` (the build 900 s, each
# run the duration + 120 s), in its own process group, stopped on exit, Ctrl-C
# or SIGTERM; the scratch directory and every test file in it are removed then
# too. Every command is printed (prefixed with "+") before it runs. Raw outputs
# (JSON, stdout, stderr) are kept in the output directory (--out, default a
# fresh /tmp/latscope-bench.XXXXXX, printed at the end). About
# runs x block sizes x 2 x (duration + 0.5 s) plus the build: 2 min with the
# defaults, more when pairs are run again.
# Shared functions: bench/lib.sh.

DIR=""
DURATION=10
RUNS=3
BSIZES="4K,64K"
FILE_SIZE=16M
NUM_FILES=2
FIO_ENGINE=vsync
NICE=0
REDO=3
MAX_OTHERS=0.3
OUT=""
BUILD_TIMEOUT=900

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--dir DIR a directory
--duration DURATION seconds
--runs RUNS a number
--bsize BSIZES a list such as 4K,64K
--file-size FILE_SIZE a size
--num-files NUM_FILES a number
--fio-engine FIO_ENGINE vsync or psync
--nice NICE a niceness
--redo REDO a number
--max-others MAX_OTHERS a fraction such as 0.25
--out OUT a directory
" "$@"

# bytes SIZE: a size with an optional K/M/G suffix (powers of 1024) in bytes.
bytes() {
  local n=${1%[kKmMgG]} m=1
  case "$1" in *[kK]) m=1024 ;; *[mM]) m=1048576 ;; *[gG]) m=1073741824 ;; esac
  case "$n" in ''|*[!0-9]*) return 1 ;; esac
  echo $((n * m))
}
whole_numbers "--runs, --duration, --num-files and --redo" "$RUNS" "$DURATION" "$NUM_FILES" "$REDO"
if [ "$RUNS" -lt 1 ] || [ "$DURATION" -lt 1 ] || [ "$NUM_FILES" -lt 1 ]; then
  echo "--runs, --duration and --num-files must be at least 1" >&2; exit 2
fi
FILE_BYTES=$(bytes "$FILE_SIZE") || { echo "--file-size: a number with an optional K, M or G suffix" >&2; exit 2; }
IFS=, read -r -a BLIST <<<"$BSIZES"
BS_BYTES=()
for b in "${BLIST[@]}"; do
  if ! { v=$(bytes "$b") && [ "$v" -ge 512 ] && [ $((v % 512)) = 0 ] && [ "$v" -le "$FILE_BYTES" ]; }; then
    echo "--bsize: '$b' is not a multiple of 512 bytes up to --file-size" >&2; exit 2
  fi
  BS_BYTES+=("$v")
done
case "$FIO_ENGINE" in vsync|psync) ;; *) echo "--fio-engine: vsync or psync" >&2; exit 2 ;; esac
case "$MAX_OTHERS" in ''|*[!0-9.]*|*.*.*) echo "--max-others takes a fraction such as 0.25" >&2; exit 2 ;; esac
case "${NICE#-}" in ''|*[!0-9]*) echo "--nice takes a whole number (-20..19)" >&2; exit 2 ;; esac
NICE_CMD=()
[ "$NICE" = 0 ] || NICE_CMD=(nice -n "$NICE")
RUN_TIMEOUT=$((DURATION + 120))

need fio "apt-get install fio"
need jq "apt-get install jq"
need awk
need cargo
need timeout "coreutils"
bench_out_dir

# ---------------------------------------------------------------- the directory
[ -n "$DIR" ] || { DIR="$REPO/target"; mkdir -p "$DIR" || die "cannot create $DIR"; }
disk_scratch "$DIR" latscope-logdisk-bench
FSTYPE=$SCRATCH_FS
# The block device under the directory, for its write counter (none: "-").
SOURCE=$(df --output=source "$SCRATCH" | tail -1)
DEVSTAT=""
if [ -b "$SOURCE" ]; then
  dev=$(basename "$(readlink -f "$SOURCE")")
  [ -r "/sys/class/block/$dev/stat" ] && DEVSTAT="/sys/class/block/$dev/stat"
fi
# Its completed write requests and flush requests (fields 5 and 16 of the
# stat file; this kernel counts the flushes among the writes too).
dev_writes() { if [ -n "$DEVSTAT" ]; then awk '{ print $5, $16 + 0 }' "$DEVSTAT"; else echo 0 0; fi; }
# Idle time of all CPUs (idle + iowait, clock ticks; exact with tickless idle,
# unlike the tick-sampled user and system fields).
idle_ticks() { awk '$1 == "cpu" { print $5 + $6; exit }' /proc/stat; }
CLK_TCK=$(getconf CLK_TCK)
NCPU=$(nproc)

print_machine "$(command -v fio)"
echo "== test directory"
echo "directory: $SCRATCH"
echo "filesystem: $FSTYPE on $SOURCE, mounted on $(findmnt -n -o TARGET --target "$SCRATCH" 2>/dev/null || echo '?') with $(findmnt -n -o OPTIONS --target "$SCRATCH" 2>/dev/null || echo '?')"
if [ -n "$DEVSTAT" ]; then
  q=$(dirname "$(readlink -f "/sys/class/block/$dev")")
  [ -d "/sys/class/block/$dev/queue" ] && q="/sys/class/block/$dev"
  echo "device: $dev, write cache: $(cat "$q/queue/write_cache" 2>/dev/null || echo '?'), scheduler: $(cat "$q/queue/scheduler" 2>/dev/null || echo '?')"
fi
echo "pattern: $NUM_FILES files x $FILE_BYTES bytes per tool and run, ${DURATION} s per run, block sizes ${BS_BYTES[*]} bytes; fio engine $FIO_ENGINE; niceness $NICE"
echo
build_latscope "$BUILD_TIMEOUT"

# ---------------------------------------------------------------- runs
ROWS="$OUT/rows.tsv"
DROPPED="$OUT/dropped.tsv"
: >"$ROWS"
: >"$DROPPED"
failed=0

# Rows (tab separated): bsize run tool writes iops bytes_per_s avg_ns p50_ns
# p99_ns max_ns min_ns duration_s cpu_s device_writes load1 clat_avg_ns others_s
# device_flushes wall_s (dropped.tsv: the same, then the attempt it caused)
# (others_s: CPU time used by everything else on the machine during the run =
# all CPUs' busy time (NCPU x wall - idle) - the tool's own CPU time)
latscope_row() {
  jq -r '.tests[0] as $t | $t.series[0] as $s |
    if $t.error != null or $t.end_reason != "duration_elapsed" then
      error("end_reason \($t.end_reason), error \($t.error)") else . end |
    [$s.detail.writes, $s.detail.iops, $s.detail.bytes_per_s, $s.avg_ns,
     ($s.percentiles[] | select(.percentile == 50) | .ns),
     ($s.percentiles[] | select(.percentile == 99) | .ns),
     $s.max_ns, $s.min_ns, $s.detail.duration_s, "-"] | @tsv' "$1"
}
fio_row() {
  jq -r '.jobs[0] as $j | $j.write as $w |
    if $j.error != 0 then error("fio error \($j.error)") else . end |
    ($w.lat_ns.percentile // $w.clat_ns.percentile) as $p |
    [$w.total_ios, $w.iops, $w.bw_bytes, $w.lat_ns.mean, $p["50.000000"], $p["99.000000"],
     $w.lat_ns.max, $w.lat_ns.min, $w.runtime / 1000, $w.clat_ns.mean] | @tsv' "$1"
}

# one_run TOOL RUN BSIZE SUFFIX FILE: runs TOOL once (outputs $OUT/TOOL-BSIZE-RUN
# SUFFIX.*), appends its row to FILE.
one_run() {
  local tool=$1 run=$2 bs=$3 name=$1-$3-$2$4 file=$5 d0 d1 i0 i1 load row others dw df wall
  empty_scratch "before $name"
  local cmd
  if [ "$tool" = latscope ]; then
    cmd=("${NICE_CMD[@]}" "$LATSCOPE" logdisk --dir "$SCRATCH" --bsize "$bs" --fileSize "$FILE_BYTES"
         --numFiles "$NUM_FILES" --duration "$DURATION" -q --json "$OUT/$name.json")
  else
    cmd=("${NICE_CMD[@]}" fio --name=log --directory="$SCRATCH" --rw=write --ioengine="$FIO_ENGINE"
         --direct=1 --sync=dsync --bs="$bs" --iodepth=1 --nrfiles="$NUM_FILES"
         --filesize="$FILE_BYTES" --file_service_type=sequential --overwrite=1
         --unlink=1 --time_based --runtime="$DURATION" --lat_percentiles=1
         --output-format=json --output="$OUT/$name.json")
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  d0=$(dev_writes)
  i0=$(idle_ticks)
  run_bounded "$name" "$RUN_TIMEOUT" "${cmd[@]}"
  local rc=$?
  i1=$(idle_ticks)
  d1=$(dev_writes)
  empty_scratch "after $name"
  [ "$rc" = 0 ] || return 1
  if [ "$tool" = latscope ]; then
    row=$(latscope_row "$OUT/$name.json" 2>"$OUT/$name.parse")
  else
    row=$(fio_row "$OUT/$name.json" 2>"$OUT/$name.parse")
  fi
  [ -n "$row" ] || { echo "  !! cannot read $OUT/$name.json: $(cat "$OUT/$name.parse")" >&2; return 1; }
  read -r dw df <<<"$(awk -v a="$d0" -v b="$d1" 'BEGIN { split(a, x, " "); split(b, y, " "); print y[1] - x[1], y[2] - x[2] }')"
  [ -n "$DEVSTAT" ] || { dw=-; df=-; }
  wall=$(cat "$OUT/$name.wall")
  others=$(awk -v n="$NCPU" -v hz="$CLK_TCK" -v i0="$i0" -v i1="$i1" -v w="$wall" \
    -v c="$(cpu_of "$name")" 'BEGIN { printf "%.2f", n * w - (i1 - i0) / hz - c }')
  # row: writes iops bps avg p50 p99 max min dur clat -> insert cpu, device writes, load
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bs" "$run" "$tool" \
    "$(cut -f1-9 <<<"$row")" "$(cpu_of "$name")" "$dw" \
    "$load" "$(cut -f10 <<<"$row")" "$others" "$df" "$wall" >>"$file"
}

# busy_rows FILE: prints "tool: why; " for each row of FILE whose others
# exceed MAX_OTHERS x NCPU x its wall time, or whose device flushes exceed
# 1.05 per write + 64.
busy_rows() {
  awk -F'\t' -v f="$MAX_OTHERS" -v n="$NCPU" '
    $17 > f * n * $19 { printf "%s: others %.1f s > %.1f s; ", $3, $17, f * n * $19 }
    $18 != "-" && $18 > 1.05 * $4 + 64 { printf "%s: %d device flushes for %d writes; ", $3, $18, $4 }' "$1"
}

# one_pair RUN BSIZE: latscope, then fio; again while disturbed (--redo).
one_pair() {
  local run=$1 bs=$2 attempt=0 suffix="" busy pair="$OUT/pair.tsv"
  while :; do
    : >"$pair"
    one_run latscope "$run" "$bs" "$suffix" "$pair" || failed=1
    one_run fio "$run" "$bs" "$suffix" "$pair" || failed=1
    busy=$(busy_rows "$pair")
    if [ -n "$busy" ] && [ "$attempt" -lt "$REDO" ]; then
      attempt=$((attempt + 1))
      echo "  .. disturbed (${busy}dropped); again ($attempt of $REDO)"
      awk -v a="$attempt" '{ print $0 "\t" a }' "$pair" >>"$DROPPED"
      suffix="-redo$attempt"
      continue
    fi
    [ -z "$busy" ] || echo "  !! disturbed (${busy}kept: no attempts left)" >&2
    cat "$pair" >>"$ROWS"
    rm -f "$pair"
    return 0
  done
}

echo "== runs: $RUNS per tool and block size, alternating latscope and fio"
for run in $(seq 1 "$RUNS"); do
  for bs in "${BS_BYTES[@]}"; do
    one_pair "$run" "$bs"
  done
done
echo

# ---------------------------------------------------------------- report
# Per block size and run: both tools' figures and the ratios latscope / fio of
# the run pair (adjacent in time). Marked: a run whose median latency is more
# than 1.5 times the lowest median of this block size (all runs, both tools),
# and one kept although the others' CPU time exceeded the limit.
for bs in "${BS_BYTES[@]}"; do
  echo "== results, $bs-byte writes (latency in us; MB/s = 10^6 bytes/s; cpu/w: the tool's CPU us per write, layout included;"
  echo "   dev/w, fl/w: the device's write and flush requests per measured write, layout included (this kernel counts"
  echo "   the flushes among the writes); others: CPU seconds used by everything else during the run)"
  awk -F'\t' -v bs="$bs" -v lim="$MAX_OTHERS" -v ncpu="$NCPU" '
    $1 == bs { k = $2 SUBSEP $3; have[k] = 1; row[k] = $0; runs[$2] = 1
               if (!lowp50 || $8 < lowp50) lowp50 = $8 }
    function line(r, t,   f) {
      split(row[r SUBSEP t], f, "\t")
      printf "%-3s %-8s %7d %7.0f %6.1f %7.1f %7.1f %7.1f %8.1f %6.1f %6.1f %5.2f %5.2f %6.2f %5s%s\n",
        r, t, f[4], f[5], f[6] / 1e6, f[7] / 1e3, f[8] / 1e3, f[9] / 1e3, f[10] / 1e3,
        f[11] / 1e3, f[13] * 1e6 / f[4], (f[14] == "-" ? 0 : f[14] / f[4]),
        (f[18] == "-" ? 0 : f[18] / f[4]), f[17], f[15],
        (f[8] > 1.5 * lowp50 ? "  <- p50 " sprintf("%.1fx", f[8] / lowp50) " the lowest" : "") \
        (f[17] > lim * ncpu * f[19] ? "  <- others over the limit" : "") \
        (f[18] != "-" && f[18] > 1.05 * f[4] + 64 ? "  <- foreign flushes" : "")
      if (t == "fio" && f[16] != "-") clat[r] = f[16] / 1e3
    }
    END {
      printf "%-3s %-8s %7s %7s %6s %7s %7s %7s %8s %6s %6s %5s %5s %6s %5s\n", "run", "tool",
        "writes", "IOPS", "MB/s", "avg", "p50", "p99", "max", "min", "cpu/w", "dev/w", "fl/w", "others", "load"
      n = 0; for (r in runs) rl[++n] = r + 0
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (rl[j] < rl[i]) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
      for (i = 1; i <= n; i++) {
        r = rl[i]
        if ((r SUBSEP "latscope") in have) line(r, "latscope"); else printf "%-3s %-8s (no data)\n", r, "latscope"
        if ((r SUBSEP "fio") in have) line(r, "fio"); else printf "%-3s %-8s (no data)\n", r, "fio"
        if (((r SUBSEP "latscope") in have) && ((r SUBSEP "fio") in have)) {
          split(row[r SUBSEP "latscope"], l, "\t"); split(row[r SUBSEP "fio"], f, "\t")
          printf "%-3s %-8s %7s %7.3f %6.3f %7.3f %7.3f %7.3f %8.2f %6.3f\n", r, "L/F", "",
            l[5] / f[5], l[6] / f[6], l[7] / f[7], l[8] / f[8], l[9] / f[9], l[10] / f[10], l[11] / f[11]
        }
      }
      for (i = 1; i <= n; i++) if (rl[i] in clat) s = s sprintf(" run %d %.2f", rl[i], clat[rl[i]])
      if (s != "") print "fio clat avg (lat without fio'"'"'s queueing before the I/O is issued), us:" s
    }' "$ROWS"
  echo
done

if [ -s "$DROPPED" ]; then
  echo "== dropped run pairs (in either run others over $MAX_OTHERS x $NCPU CPUs x wall, or foreign flushes; not in the figures above or below)"
  awk -F'\t' '{ printf "%6s bytes run %s attempt %s %-8s: IOPS %6.0f, avg %7.1f us, p50 %7.1f us, others %5.2f s of %5.1f s wall, flushes/write %s\n",
    $1, $2, $20, $3, $5, $7 / 1e3, $8 / 1e3, $17, $19, ($18 == "-" ? "-" : sprintf("%.2f", $18 / $4)) }' "$DROPPED"
  echo
fi

# Over all runs: IOPS and MB/s = mean of the runs (equal durations), avg =
# mean over all writes, p99 = mean of the runs' p99, max = the highest. And,
# since the disk's speed drifts between runs by more than the goals' margins,
# the run pairs' ratios (each pair ran back to back): their range, geometric
# mean and its 95 % confidence interval (Student's t over the logs), which
# says whether these runs can tell the goal apart at all.
echo "== goals, latscope / fio over all runs (IOPS, MB/s: mean of the runs; avg latency: mean over all writes)"
for bs in "${BS_BYTES[@]}"; do
  awk -F'\t' -v bs="$bs" '
    function t975(df) {  # Student t, 97.5 % quantile
      split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086", t, " ")
      return df < 1 ? 0 : df <= 20 ? t[df] : df <= 30 ? 2.05 : 1.98
    }
    # pairs K LOW HIGH: "run pairs a..b, geometric mean g, 95 % CI [l, h]" and
    # whether the interval lies inside [LOW, HIGH], outside it, or across.
    function pairs(k, low, high,   r, m, s, ss, x, g, h, lo, hi, a, b, ci) {
      m = 0; s = 0; ss = 0; lo = 1e9; hi = 0
      for (r in runs) if ((("latscope" SUBSEP r SUBSEP k) in v) && (("fio" SUBSEP r SUBSEP k) in v)) {
        x = v["latscope", r, k] / v["fio", r, k]; m++
        if (x < lo) lo = x; if (x > hi) hi = x
        s += log(x); ss += log(x) * log(x)
      }
      if (m == 0) return "no run pairs"
      g = s / m
      if (m < 2) return sprintf("one run pair: %.3f", exp(g))
      h = t975(m - 1) * sqrt((ss - s * s / m) / (m - 1) / m)
      a = exp(g - h); b = exp(g + h)
      ci = (a >= low && b <= high) ? "inside the goal" : (b < low || a > high) ? "outside the goal" : "across the goal: not resolved"
      return sprintf("%d run pairs %.3f..%.3f, geometric mean %.3f, 95%% CI %.3f..%.3f (%s)", m, lo, hi, exp(g), a, b, ci)
    }
    $1 == bs { n[$3]++; io[$3] += $5; bw[$3] += $6; lat[$3] += $4 * $7; w[$3] += $4; p99[$3] += $9
               if ($10 > mx[$3]) mx[$3] = $10
               v[$3, $2, "io"] = $5; v[$3, $2, "bw"] = $6; v[$3, $2, "avg"] = $7; runs[$2] = 1 }
    END {
      if (!n["latscope"] || !n["fio"]) { printf "%s bytes: missing data\n", bs; exit }
      lio = io["latscope"] / n["latscope"]; fio = io["fio"] / n["fio"]
      lbw = bw["latscope"] / n["latscope"]; fbw = bw["fio"] / n["fio"]
      lav = lat["latscope"] / w["latscope"]; fav = lat["fio"] / w["fio"]
      lp = p99["latscope"] / n["latscope"]; fp = p99["fio"] / n["fio"]
      printf "%s bytes IOPS:      latscope %.0f, fio %.0f, ratio %.3f -> %s (goal: at least 0.98)\n    %s\n",
        bs, lio, fio, lio / fio, (lio / fio >= 0.98 ? "MET" : "NOT MET"), pairs("io", 0.98, 1e9)
      printf "%s bytes bandwidth: latscope %.2f MB/s, fio %.2f MB/s, ratio %.3f -> %s (goal: at least 0.98)\n    %s\n",
        bs, lbw / 1e6, fbw / 1e6, lbw / fbw, (lbw / fbw >= 0.98 ? "MET" : "NOT MET"), pairs("bw", 0.98, 1e9)
      d = lav / fav - 1; ad = d < 0 ? -d : d
      printf "%s bytes avg:       latscope %.2f us, fio %.2f us, ratio %.3f -> %s (goal: within 5%%)\n    %s\n",
        bs, lav / 1e3, fav / 1e3, lav / fav, (ad <= 0.05 ? "MET" : "NOT MET"), pairs("avg", 0.95, 1.05)
      printf "%s bytes p99 (mean of the runs), max (highest), no goal: latscope %.1f / %.1f us, fio %.1f / %.1f us, p99 ratio %.3f\n",
        bs, lp / 1e3, mx["latscope"] / 1e3, fp / 1e3, mx["fio"] / 1e3, lp / fp
    }' "$ROWS"
done
echo

echo "raw outputs: $OUT (rows.tsv: one row per run and tool)"
exit "$failed"

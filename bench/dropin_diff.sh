#!/usr/bin/env bash
# Differential test of latscope's cyclictest, ptsematest, cyclicdeadline, signaltest, oslat, pi_stress and rt-migrate-test
# drop-ins against the real rt-tests tools: the same argument vector is run by both, each
# through a link with the real name (argv[0] is `cyclictest`/`ptsematest`/`oslat`/... in
# both cases, as scripts run them), in its own scratch directory, one after
# the other, and everything they produce is compared:
#   - the exit code;
#   - stdout and stderr with the measured numbers masked (see `mask` below:
#     latencies, counts, tids, dates, load averages) but widths of padded
#     fields, order, blank lines, escape sequences and every other byte exact;
#     the running display's redraws (cursor-up escape, then the block) are
#     compared as one redraw, since how many there are depends on timing;
#   - every file the run leaves in its directory (--json=FILE, --histfile=F,
#     -F's pipe): names, types and masked contents (JSON numbers masked
#     whatever their width; its non-zero histogram buckets compared as one);
#   - what real consumers' parsing logic (OSADL's plot recipe, rteval, LAVA's
#     T:-line regex, kernelci's JSON reader, OpenShift's oslat `Maximum:`
#     regex, MicroShift's per-thread JSON `max`; bench/dropin_parsers.py) gets
#     out of stdout and the JSON file: the same fields, rows and types.
#
#   bench/dropin_diff.sh [--only REGEX] [--keep DIR] [--list]
#
# --only runs the cases whose name matches REGEX (grep -E); --keep keeps the
# raw outputs in DIR (default: a temporary directory removed at the end);
# --list prints the cases. Uses $LATSCOPE (default target/release/latscope,
# built beforehand: this script does not build) and the real tools from
# $RTBIN (default /usr/bin). Needs root (real-time priorities, mlockall),
# perl, python3, timeout. Runs are short (-l 20..200 loops, -D 1): about 4 minutes
# (oslat's runs are the longest: a 1 s pre-heat, then -D 1).
#
# A case whose difference is a defect of the real tool that latscope does not
# copy (docs/compat.md, "Drop-in for cyclictest", what differs) is marked `known`: it
# is run and reported as KNOWN, with the reason, and does not fail the run.
# A case that differs is run once more before it counts (a busy machine can
# push a latency past a field's width once). Exit 0 when every other case is
# the same, 1 otherwise.

set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
LATSCOPE=${LATSCOPE:-$REPO/target/release/latscope}
RTBIN=${RTBIN:-/usr/bin}
ONLY=""
KEEP=""
LIST=0
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --list) LIST=1; shift ;;
    *) echo "usage: $0 [--only REGEX] [--keep DIR] [--list]" >&2; exit 2 ;;
  esac
done

[ -x "$LATSCOPE" ] || { echo "error: $LATSCOPE not built (cargo build --release)" >&2; exit 1; }
for t in cyclictest ptsematest cyclicdeadline signaltest oslat pi_stress rt-migrate-test; do
  [ -x "$RTBIN/$t" ] || { echo "error: $RTBIN/$t not found (Debian rt-tests)" >&2; exit 1; }
done
command -v perl >/dev/null || { echo "error: perl not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "error: python3 not found" >&2; exit 1; }

# Both sides' paths have the same length (real/ours), so a path printed in a
# padded field keeps its width once replaced by @D@.
if [ -n "$KEEP" ]; then
  mkdir -p "$KEEP" || exit 1
  WORK=$(cd "$KEEP" && pwd)
else
  WORK=$(mktemp -d /tmp/dropin-diff.XXXXXX) || exit 1
  trap 'rm -rf "$WORK"' EXIT
fi
for side in real ours; do
  mkdir -p "$WORK/$side/bin"
done
for t in cyclictest ptsematest cyclicdeadline signaltest oslat pi_stress rt-migrate-test; do
  ln -sf "$RTBIN/$t" "$WORK/real/bin/$t"
  ln -sf "$LATSCOPE" "$WORK/ours/bin/$t"
done

# ------------------------------------------------------------------ the cases
# case NAME TOOL ARGS [known REASON]: ARGS is one shell-quoted string (eval'd,
# so $'\xff' gives raw bytes); @D@ in it is the case's scratch directory.
NAMES=() TOOLS=() ARGVS=() KNOWN=()
case_() {
  NAMES+=("$1") TOOLS+=("$2") ARGVS+=("$3") KNOWN+=("${4:-}")
}
ct() { case_ "ct:$1" cyclictest "$2" "${3:-}"; }
pt() { case_ "pt:$1" ptsematest "$2" "${3:-}"; }
cdl() { case_ "cdl:$1" cyclicdeadline "$2" "${3:-}"; }
st() { case_ "st:$1" signaltest "$2" "${3:-}"; }
os() { case_ "os:$1" oslat "$2" "${3:-}"; }
pi() { case_ "pi:$1" pi_stress "$2" "${3:-}"; }
rm_() { case_ "rm:$1" rt-migrate-test "$2" "${3:-}"; }

L="-l 100 -i 1000"   # a short run: 0.1 s
# --- cyclictest: every option of --help alone (with a short run)
ct help               "--help"
ct help-prefix        "--he"
ct plain              "$L"
ct quiet              "-q $L"
ct affinity           "-a -q $L"
ct affinity-0         "-a 0 -q $L"
ct affinity-1         "-a1 -q $L"
ct affinity-list      "-a 0-1 -t 2 -q $L"
ct affinity-not       "-a !0 -q $L"
ct aligned            "-A 100 -q $L"
ct aligned-bare       "-A -q $L"
ct breaktrace         "-b 100000 -q $L"
ct breaktrace-hit     "-b 1 -q $L"
ct breaktrace-mark    "-b 1 --tracemark -q $L"
ct tracemark          "--tracemark -q $L"
ct clock-0            "-c 0 -q $L"
ct clock-1            "-c 1 -q $L"
ct default-system     "--default-system -q $L"
ct distance           "-t 2 -d 100 -q $L"
ct distance-0         "-t 2 -d0 -q $L"
ct duration           "-D 1 -q"
ct duration-l         "-D 1m -q -l 50"
ct fifo               "-F @D@/fifo -q $L" "cyclictest leaves its -F pipe behind; latscope removes the pipe it made"
ct histogram          "-h 10 -q $L"
ct histofall          "-H 10 -t 2 -q $L"
ct histfile           "--histfile=@D@/hist -h 10 -q $L"
ct histfile-nohist    "--histfile=@D@/hist -q $L"
ct interval           "-i 500 -q -l 100"
ct json               "--json=@D@/out.json -q $L"
ct json-t2-h          "--json=@D@/out.json -t2 -h 20 -q $L"
ct laptop             "--laptop -q $L"
ct latency            "--latency=5 -q $L"
ct loops              "-l 20"
ct mainaffinity       "--mainaffinity=0 -q $L"
ct mlockall           "-m -q $L"
ct refresh-on-max     "-M $L"
ct nsecs              "-N -q $L"
ct nsecs-live         "-N $L"
ct oscope             "-o 2 -v -l 20"
ct priority           "-p 80 -q $L"
ct policy-fifo        "--policy fifo -q $L"
ct policy-rr          "--policy=rr -p 50 -q $L"
ct policy-other       "--policy=other -q $L"
ct policy-batch       "--policy=batch -q $L"
ct policy-idle        "--policy=idle -q $L"
ct policy-normal      "--policy=normal -q $L"
ct priospread         "--priospread -t 2 -p 90 -q $L"
ct priospread-nop     "--priospread -t 2 -q $L"
ct relative           "-r -q $L"
ct resolution         "-R -q $L"
ct secaligned         "--secaligned -q -l 20"
ct secaligned-us      "--secaligned 100 -q -l 20"
ct system             "-s -q $L"
ct smp                "-S -q $L"
ct smp-long           "--smp -q $L"
ct spike              "--spike=1 -q $L"
ct spike-nodes        "--spike=1 --spike-nodes=3 -q $L"
ct smi                "--smi -a -q $L"
ct threads            "-t -q $L"
ct threads-2          "-t 2 -q $L"
ct threads-eq         "--threads=2 -q $L"
ct unbuffered         "-u -q $L"
ct verbose            "-v -l 20"
ct dbg                "--dbg_cyclictest -q $L"
ct posix-timers       "-x -q $L"
ct live               "-l 200 -i 1000"
ct live-t2            "-t2 -l 200 -i 1000"
# --- cyclictest: command lines used in the wild
ct osadl              "-m -Sp90 -i200 -h400 -q -l 200"
ct lava-old           "-t1 -p 80 -n -i 10000 -l 10000"
ct lava-old-valid     "-t1 -p 80 -i 10000 -l 20"
ct rteval             "-D 1 -m -q -p95 --policy fifo -t -a -i100 -h 3500"
ct kernelci           "--json=@D@/ci.json -q -m -Sp98 -l 100"
ct kernelci-h         "--json=@D@/ci.json -q -m -p98 -h 50 -l 100"
ct smp-duration       "-S -p99 -i1000 -m -n -D 1m -l 50"
ct smp-duration-ok    "-S -p99 -i1000 -m -D 1m -l 50 -q"
ct all-d0             "-t -a -m -p99 -i200 -d0 -l 100 -q"
ct all-d0-live        "-t -a -m -p99 -i200 -d0 -l 100"
ct ftrace-b           "-b 100000 --tracemark -p 90 -l 200 -q"
ct nq-smp             "-S -p 90 -l 100"
ct mq                 "-mq -l 50"
ct cluster            "-qmSp90 -l 50"
ct v-t2               "-v -t 2 -l 10" "timing, not a difference: how many of the slower thread's values appear depends on when the main loop sees the first thread done (rt-tests' own runs show 6 to 10)"
ct v-q                "-v -q -l 10"
ct h-N                "-h 5 -N -q $L"
ct H-json             "-H 5 --json=@D@/o.json -q $L"
ct histfile-json-same "--histfile=@D@/same -h 5 --json=@D@/same -q $L"
ct json-prefix        "--js=@D@/o.json -q $L"
# --- cyclictest: hostile and bad input
ct unknown-short      "-Z"
ct unknown-long       "--bogus"
ct unknown-after      "-q -l 20 -Z"
ct ambiguous          "--hist 30"
ct missing-i          "-i"
ct missing-l          "-q -l"
ct missing-json       "--json"
ct json-no-eq         "--json @D@/o.json -q $L"
ct json-empty         "--json= -q $L"
ct json-nodir         "--json=/nonexistent/dir/f -q $L"
ct json-is-dir        "--json=@D@ -q $L"
ct histfile-nodir     "--histfile=/nonexistent/dir/f -h 5 -q $L"
ct noarg-long         "--mlockall=1 -q $L"
ct i-0                "-i 0 -q -l 20" "cyclictest -i 0 spins without sleeping; latscope refuses it (exit 2)"
ct i-neg              "-i -5 -q -l 20" "cyclictest -i -5 spins without sleeping; latscope refuses it (exit 2)"
ct i-abc              "-i abc -q -l 20" "atoi gives 0: cyclictest spins; latscope refuses it (exit 2)"
ct t-0                "-t 0 -q $L"
ct t-1000             "-t 1000 -q -l 5 -i 10000"
ct t-neg              "-t -1 -q $L"
ct t-abc              "-t abc -q $L"
ct a-99               "-a 99 -q $L"
ct a-abc              "-a abc -q $L"
ct a-open             "-a 0- -q $L"
ct a-empty            "-a '' -q $L"
ct p-200              "-p 200 -q $L"
ct p-neg              "-p -1 -q $L"
ct p-99               "-p 99 -q $L"
ct p-0                "-p 0 -q $L"
ct policy-bogus       "--policy bogus -q $L"
ct D-1x               "-D 1x -q"
ct D-neg              "-D -1 -q -l 50"
ct D-abc              "-D abc -q -l 50"
ct l-abc              "-l abc -q -D 1"
ct l-neg              "-l -5 -q -D 1"
ct h-neg              "-h -3 -q $L"
ct h-0                "-h 0 -q $L"
ct h-abc              "-h abc -q $L"
ct h-huge             "-h 99999999999 -q -l 10"
ct l-huge             "-l 99999999999999999999 -q -D 1"
ct d-neg              "-t 2 -d -600 -q $L"
ct o-0                "-o 0 -v -l 10"
ct o-noverbose        "-o 2 -q $L"
ct c-2                "-c 2 -q $L" "cyclictest accepts -c 2 and reads past its clock table; latscope refuses it (exit 2)"
ct c-neg              "-c -1 -q $L"
ct b-neg              "-b -5 -q $L"
ct spike-nodes-0      "--spike=1 --spike-nodes=0 -q $L"
ct empty-arg          "'' -q $L"
ct non-utf8-arg       "$'\\xff' -q $L" "latscope refuses arguments that are not UTF-8 (one line, exit 2); cyclictest takes the bytes"
ct non-utf8-opt       "-q $'-\\xff' $L" "latscope refuses arguments that are not UTF-8 (one line, exit 2); cyclictest takes the bytes"
ct non-utf8-json      "--json=@D@/$'\\xe9'.json -q $L" "latscope refuses arguments that are not UTF-8 (one line, exit 2); cyclictest takes the bytes"
ct dashdash           "-q -- -l 20 $L"
ct positional         "-q foo bar $L"
ct A-secaligned       "-A 10 --secaligned -q $L"
ct mainaffinity-bad   "--mainaffinity=abc -q $L"
ct mainaffinity-99    "--mainaffinity=99 -q $L"
ct latency-neg        "--latency=-5 -q $L"
ct priospread-smp     "--priospread -S -q $L"
ct S-t                "-S -t 3 -q $L"
ct S-a                "-S -a 1 -q $L"
ct h-d                "-h 5 -d 100 -q $L"
ct repeat-i           "-i 0 -i 1000 -q $L"
ct repeat-p           "-p 200 -p 50 -q $L"
ct json-full          "--json=/dev/full -q $L" "a --json file that opens and cannot be written is said on stderr, exit 1, where cyclictest exits 0 in silence (docs/compat.md)"
# --- ptsematest
P="-l 100 -i 1000"
pt help               "--help"
pt plain              "$P" "the running display shows the pairs values from its first redraw, not ptsematest unset ones, and a short run may end before a redraw (docs/compat.md, ptsematest)"
pt quiet              "-q $P"
pt affinity           "-a -q $P"
pt affinity-1         "-a 1 -q $P"
pt affinity-eq        "--affinity=0 -q $P"
pt breaktrace         "-b 100000 -q $P"
pt breaktrace-hit     "-b 1 -q $P -t 2" "latscope says on stderr where it stopped the kernel tracer at the break"
pt distance           "-t 2 -d 100 -q $P"
pt duration           "-D 1 -q"
pt interval           "-i 500 -q -l 100"
pt json               "--json=@D@/pt.json -q $P" "rt_test_version: is latscope version (0.01) and an unpinned pair shows the CPU it was placed on, not the one it ran on last (docs/compat.md, ptsematest)"
pt json-t2            "--json=@D@/pt.json -t2 -p80 -q $P" "rt_test_version: is latscope version (0.01) and an unpinned pair shows the CPU it was placed on, not the one it ran on last (docs/compat.md, ptsematest)"
pt loops              "-l 20" "the running display shows the pairs values from its first redraw, not ptsematest unset ones, and a short run may end before a redraw (docs/compat.md, ptsematest)"
pt prio               "-p 80 -q $P"
pt prio-long          "--prio=80 -q $P"
pt smp                "-S -q $P"
pt smp-p              "-S -p90 -q $P"
pt threads            "-t -q $P"
pt threads-2          "-t 2 -q $P"
pt threads-eq         "--threads=2 -q $P"
pt all                "-a -t -p99 -i100 -d25 -l 200 -q"
pt live               "-t 2 -l 200 -i 1000" "the running display shows the pairs values from its first redraw, not ptsematest unset ones, and a short run may end before a redraw (docs/compat.md, ptsematest)"
pt unknown            "-Z"
pt unknown-long       "--bogus"
pt missing-l          "-l"
pt missing-json       "--json"
pt json-nodir         "--json=/nonexistent/dir/f -q $P" "a value ptsematest takes but mishandles is refused with one line and exit 2 (docs/compat.md, ptsematest)"
pt json-is-dir        "--json=@D@ -q $P" "a value ptsematest takes but mishandles is refused with one line and exit 2 (docs/compat.md, ptsematest)"
pt i-0                "-i 0 -q -l 20"
pt i-neg              "-i -5 -q -l 20" "a value ptsematest takes but mishandles is refused with one line and exit 2 (docs/compat.md, ptsematest)"
pt i-abc              "-i abc -q -l 20"
pt t-0                "-t 0 -q $P"
pt t-1000             "-t 1000 -q -l 2"
pt a-99               "-a 99 -q $P"
pt a-abc              "-a abc -q $P"
pt p-200              "-p 200 -q $P"
pt p-neg              "-p -1 -q $P"
pt D-1x               "-D 1x -q"
pt D-neg              "-D -1 -q -l 50"
pt l-abc              "-l abc -q -D 1"
pt l-neg              "-l -5 -q -D 1" "a value ptsematest takes but mishandles is refused with one line and exit 2 (docs/compat.md, ptsematest)"
pt d-neg              "-t 2 -d -600 -q $P" "a value ptsematest takes but mishandles is refused with one line and exit 2 (docs/compat.md, ptsematest)"
pt empty-arg          "'' -q $P"
pt non-utf8           "$'\\xff' -q $P" "a gap of the drop-in: a stray word that is not UTF-8 is refused (exit 2), where ptsematest ignores every stray word"
pt dashdash           "-q -- -l 20 $P"
pt positional         "-q foo $P"
pt cluster            "-qSp90 -l 50"
# a repeated option: the last value counts and only it is checked (issue 40, item 13)
pt repeat-l           "-l -1 -q -l 5"
pt repeat-p           "-p 200 -p 50 -q $P"
pt repeat-t           "-t 1000 -t 1 -q $P"
pt repeat-a           "-a 99 -a 1 -q $P"
pt repeat-a-bare      "-a 99 -a -q $P"
pt repeat-D           "-D -1 -D 1 -q -l 50"
pt repeat-help        "-p 200 -h"
pt json-full          "--json=/dev/full -q $P" "a --json file that opens and cannot be written is said on stderr, exit 1, where ptsematest exits 0 in silence (docs/compat.md)"
pt huge-l             "-l 99999999999999999999 -q -D 1"
# --- signaltest: every option of --help (and -S), bad values, JSON
S="-l 100"   # 100 laps: about 0.1 s
st repeat-p           "-p 200 -p 50 -q $S"
st json-full          "--json=/dev/full -q $S" "a --json file that opens and cannot be written is said on stderr, exit 1, where signaltest exits 0 in silence (docs/compat.md)"
OWN_CPU="each thread's JSON cpu is its own (signaltest writes thread 0's for all)"
st help               "--help"
st help-h             "-h"
st help-prefix        "-q --he"
st plain              "$S"
st quiet              "-q $S"
st verbose            "-v -l 50"
st verbose-q          "-q -v -l 50"
st threads-3          "-t 3 -q $S"
st threads-eq         "--threads=3 -q $S"
st prio               "-p 80 -q $S"
st prio-long          "--prio=80 -q $S"
st cluster            "-qp90 -l 50"
st affinity           "-a -q $S"
st affinity-1         "-a 1 -q $S"
st affinity-eq        "--affinity=0 -q $S"
st affinity-v         "-v -a 0-1 -q -l 40"
st smp                "-S -q $S"
st smp-a              "-S -a 1 -q $S"
st breaktrace-hit     "-b 1 -q"
st breaktrace         "-b 1000000 -q $S"
st duration           "-D 1 -q"
st mlockall           "-m -q $S"
st json               "--json=@D@/st.json -q $S" "$OWN_CPU"
st json-t3            "--json=@D@/st.json -t 3 -p 80 -q $S" "$OWN_CPU"
st json-nodir         "--json=/nonexistent/dir/f -q $S"
st unknown            "-Z"
st unknown-long       "--bogus"
st missing-l          "-l"
st missing-json       "--json"
st p-200              "-p 200 -q $S"
st p-neg              "-p -1 -q $S"
st t-1                "-t 1 -q $S"
st D-neg              "-D -1 -q $S"
st a-99               "-a 99 -q $S"
st a-abc              "-a abc -q $S"
st a-S                "-a -S -q $S"
st l-abc              "-l abc -q -D 1"
st l-neg              "-l -5 -q -D 1"
st dashdash           "-q $S -- -Z"
st positional         "-q foo $S"
st empty-arg          "'' -q $S"

# --- cyclicdeadline: intervals of 4 ms and more (Debian's needs HRTICK for
# runtimes under 2 ms, 60 % of the interval, and cannot turn it on where
# debugfs' sched features are closed); never -a with some CPUs only, for
# which cyclicdeadline moves every task of the machine into its cpusets.
C="-i 4000 -D 1"
cdl help              "--help"
cdl help-short        "-h"
cdl help-prefix       "--he"
cdl quiet             "-q $C"
cdl live              "$C"
cdl live-t2           "-t 2 $C"
cdl threads-2         "-t 2 -s 1000 -q $C"
cdl threads-3         "-t 3 -q $C"
cdl threads-long      "--threads=2 --step=1000 --interval=4000 --duration=1 --quiet"
cdl json              "--json=@D@/dl.json -t 2 -q $C"
cdl affinity-all      "-a 0-1 -q $C"
cdl affinity-bare     "-q $C -a"
cdl breaktrace        "-b 100000 -q $C"
cdl lkft              "-q -i 4000 -s 500 -t 2 -D 1 --json=@D@/ci.json"
cdl default           "-q -D 1" "Debian's cyclicdeadline needs HRTICK for runtimes under 2 ms and fails where it cannot turn it on; latscope neither needs nor sets it"
cdl unknown           "-Z"
cdl unknown-long      "--bogus"
cdl missing-i         "-i"
cdl missing-json      "--json"
cdl ambiguous         "--t 2"
cdl noarg-long        "--quiet=1"
cdl c-missing         "-c"
cdl bad-cpu           "-a 5"
cdl bad-cpu-abc       "-a abc"
cdl bad-cpu-eq        "--affinity=9"
cdl a-then-option     "-a -D"
cdl json-nodir        "--json=/nonexistent/dir/f -q $C"

# --- oslat (2.40): every option of --help, bad values, JSON. A run is a 1 s
# pre-heat then -D 1; every run names its CPUs (-c), since without -c the
# drop-in leaves out the main thread's CPU on purpose (os:default).
O="-c 1 -D 1"
os help               "--help"
os help-h             "-h"
os help-prefix        "--he"
os version            "-v"
os version-long       "--version"
os plain              "$O"
os quiet              "-q $O"
os quiet-long         "--quiet $O"
os zero-omit          "-z $O"
os zero-omit-long     "--zero-omit -c 0-1 -D 1"
os bias               "-B $O"
os bias-long          "--bias -c 0-1 -D 1"
os bias-z             "-B -z $O"
os bucket-size        "-b 8 $O"
os bucket-size-long   "--bucket-size=100 $O"
os bucket-size-1024   "-b 1024 $O"
os cpus-0-1           "-c 0-1 -D 1"
os cpus-comma         "-c 0,1 -D 1"
os cpus-all           "-c all -D 1"
os cpu-list-long      "--cpu-list=1 -D 1"
os main-cpu           "-C 1 -c 0 -D 1"
os main-cpu-long      "--cpu-main-thread 1 -c 0 -D 1"
os duration-long      "--duration=1 -c 1"
os duration-suffix    "-D 1x -c 1"
os json               "--json=@D@/os.json $O"
os json-2cpus         "--json=@D@/os.json -c 0-1 -D 1 -z"
os json-prefix        "--js=@D@/os.json $O"
os rtprio             "-f 1 $O"
os rtprio-long        "--rtprio=1 $O"
os memmove            "-w memmove -m 4K $O"
os memmove-long       "--workload=memmove --workload-mem=1M $O"
os workload-no        "-w no $O"
os workload-mem-only  "-m 4K $O"
os single-preheat     "-s -c 0-1 -D 1"
os single-preheat-long "--single-preheat -c 0-1 -D 1"
os trace              "-T 1 $O"
os trace-long         "--trace-threshold=1 $O"
os trace-not-hit      "-T 1000000 $O"
os cluster            "-zqBc1 -D1"
os positional         "$O foo"
os dashdash           "$O -- -Z"
os empty-arg          "'' $O"
os openshift          "--duration 1 --rtprio 1 --cpu-list 1 --cpu-main-thread 0"
os microshift         "-D 1 --rtprio 1 --cpu-list 1 --cpu-main-thread 0 --json=@D@/ms.json --zero-omit"
os default            "-D 1" "without -c oslat measures every CPU (CPU list: all), the main thread's CPU 0 too; the drop-in leaves out the main thread's CPU and its SMT siblings and prints the list it measures (docs/compat.md, oslat)"
os bucket-width       "-W 500 $O" "-W/--bucket-width is rt-tests 2.5's option: oslat 2.40 refuses it, the drop-in takes it as 2.8 does"
# --- oslat: hostile and bad input
os unknown            "-Z"
os unknown-long       "--bogus"
os unknown-after      "$O -Z"
os missing-D          "-D"
os missing-c          "-c"
os missing-json       "--json"
os missing-m          "-m"
os D-0                "-D 0"
os D-abc              "-D abc"
os b-4                "-b 4 $O"
os b-1025             "-b 1025 $O"
os f-100              "-f 100 $O"
os f-0                "-f 0 $O"
os w-foo              "-w foo $O"
os m-foo              "-m foo $O"
os T-0                "-T 0 $O"
os c-9                "-c 9 -D 1"
os c-abc              "-c abc -D 1"
os c-0x               "-c 0x -D 1"
os c-4095             "-c 4095 -D 1"
os C-9                "-C 9 $O"
os C-abc              "-C abc $O"
os json-nodir         "--json=/nonexistent/dir/f $O" "oslat measures the whole run, then cannot open the file (its two lines, exit 2); latscope refuses the path before the run (one line, exit 2)"
# --- pi_stress: every option of --help, bad values, JSON (-i 100: a fraction of a second)
PI_KILLS="pi_stress kills its process group with SIGTERM after an error line; latscope prints its lines and exits 1"
pi help               "--help"
pi help-h             "-h"
pi help-prefix        "--he"
pi version            "-V"
pi plain              "-i 100"
pi quiet              "-q -i 100"
pi duration           "-q -D 1"
pi duration-banner    "-D 1"
pi groups             "-g 1 -q -i 100"
pi groups-too-many    "-g 99"
pi inversions-long    "--inversions=100 -q"
pi json               "--json=@D@/pi.json -q -i 100"
pi json-nodir         "--json=/nonexistent/dir/f -q -i 100"
pi mlockall           "-m -q -i 100"
pi rr                 "-r -i 100"
pi sched-high-rr      "-s id=high,policy=rr,priority=5 -i 100"
pi sched-low-other    "-s id=low,policy=other -i 100"
pi sched-high-dl      "-s id=high,policy=deadline,runtime=100000,deadline=200000,period=300000 -u -i 100"
pi sched-bad          "-s garbage -q -i 100" "$PI_KILLS"
pi uniprocessor       "-u -q -i 100"
pi verbose            "-v -i 100"
pi unknown            "-Z"
pi unknown-long       "--bogus"
pi missing-g          "-g"
pi missing-json       "--json"
# --- rt-migrate-test: every option of --help, bad values, JSON (-l 2: 0.4 s)
R="-l 2"
rm_ help              "--help"
rm_ help-h            "-h"
rm_ plain             "$R"
rm_ quiet             "-q $R"
rm_ check             "-q -c -m 100000 $R"
rm_ duration-cut      "-q -l 50 -D 1"
rm_ duration-long     "-q $R -D 1m"
rm_ equal             "-q -e $R 4"
rm_ json              "--json=@D@/m.json -q $R"
rm_ json-nodir        "--json=/nonexistent/dir/f -q $R"
rm_ maxerr            "-q -m 5000 -c $R"
rm_ prio              "-q -p 50 $R"
rm_ prio-long         "--prio=50 -q $R"
rm_ run-time          "-q -r 5 $R"
rm_ sleep-time        "-q -s 5 $R"
rm_ tasks             "-q $R 2"
rm_ unknown           "-Z"
rm_ unknown-long      "--bogus"
rm_ missing-l         "-l"

if [ "$LIST" = 1 ]; then
  for i in "${!NAMES[@]}"; do
    printf '%-28s %s %s\n' "${NAMES[$i]}" "${TOOLS[$i]}" "${ARGVS[$i]}"
  done
  exit 0
fi

# ------------------------------------------------------------------ masking
# Only what is measured is masked; every other number (thread index, P:, I:,
# CPU, counts of CPUs, intervals, the cpu_dma_latency value, JSON keys and
# settings) is compared exactly. Text: a measured value in a padded field
# becomes as many N as the field is wide (padding included), so widths are
# compared whatever the value; unpadded measured values (tids after ID,
# ptsematest's Cycles, the break value, overflow cycle lists, load averages)
# become one N. JSON: the measured values (min, avg, max, cycles, samples,
# the times) become N; the non-zero histogram buckets, whose number depends
# on the run, count as one line once masked.
mask() { # MODE(text|json) DIR < in > out
  perl -e '
    my ($mode, $dir) = @ARGV;
    local $/; my $s = <STDIN>; $s = "" unless defined $s;
    $s =~ s/\Q$dir\E/\@D\@/g;
    my $w = sub { "N" x length($_[0]) };
    if ($mode eq "json") {
      $s =~ s/("(?:start_time|end_time)": )"[^"]*"/$1"T"/g;
      # (oslat: freq is the measured MHz of the counter, duration the time of the thread)
      $s =~ s/("(?:min|max|avg|cycles|samples|freq|duration|inversion|total)": )-?\d+(\.\d+)?/$1N/g;
      # whether a thread has buckets at all depends on the run too
      $s =~ s/^(\s*)"histogram": \{      \}/$1"histogram": {\n$1  "0": 0\n$1}/mg;
      my @out; my $prev = "";
      for my $l (split /\n/, $s, -1) {
        my $k = $l;
        $k =~ s/^(\s*)"\d+": \d+,?$/$1"B": N/;
        push @out, $k unless $k eq $prev && $k =~ /^\s*"B": N$/;
        $prev = $k;
      }
      print join("\n", @out);
      exit;
    }
    # Every text substitution below stays within one line: they run line by
    # line, since on one 14 MB string (-h 99999999999: a million rows) the
    # multi-line matching took minutes.
    my @lines = split /(?<=\n)/, $s;
    my $bias;
    for my $s (@lines) {
    $s =~ s/loadavg: [^\n]*/loadavg: L/g;
    # signaltest: its running display starts with /proc/loadavg itself
    # (after the cursor-up escape of every redraw but the first)
    $s =~ s/^(\e\[\d+A)?\d+\.\d+ \d+\.\d+ \d+\.\d+ \d+\/\d+ \d+(?= {10}$)/($1 \/\/ "")."L"/mge;
    # cyclictest T: lines (tid, cycles, latencies, SMIs) and spike lines
    $s =~ s/(T:[ \d]*\d \()( *\d+)\)/$1.$w->($2).")"/ge;
    $s =~ s/((?:C|Min|Act|Avg|Max|SMI|Spike):)( *-?\d+)/$1.$w->($2)/ge;
    $s =~ s/(TS: )( *\d+)/$1.$w->($2)/ge;
    # -v values n:c:v
    $s =~ s/^( *\d+: *\d+:)( *-?\d+)$/$1.$w->($2)/mge;
    # -o: which values are shown depends on when the display loop runs
    $s =~ s/^( *\d+:)( *\d+)(:N+)$/$1.$w->($2).$3/mge if $ENV{MASK_COUNTS};
    # unpinned ptsematest threads show the CPU they run on right now
    $s =~ s/\bCPU-?\d+/CPUN/g if $ENV{MASK_CPU};
    # -h rows and footer
    $s =~ s/^(\d{6})([ \t][\d\t ]*)$/$1.join("", map { \/\d\/ ? $w->($_) : $_ } split(\/([ \t])\/, $2))/mge;
    # zero-padded (%05lu, %09llu): a value wider than its field (-N) is
    # measured, a narrower field would be a difference
    my $z = sub { my ($v, $min) = @_; "N" x (length($v) < $min ? length($v) : $min) };
    $s =~ s/^(# Total:)((?: \d+)+)$/$1.join("", map { " ".$z->($_, 9) } grep { length } split(\/ \/, $2))/mge;
    $s =~ s/^(# (?:Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows|SMIs):)((?: \d+)+)$/$1.join("", map { " ".$z->($_, 5) } grep { length } split(\/ \/, $2))/mge;
    $s =~ s/^(# Thread Ids:).*$/$1 LIST/mg;
    $s =~ s/^(# Thread \d+:).*$/$1 LIST/mg;
    $s =~ s/(# Break (?:value|thread): )\d+/$1N/g;
    # cyclicdeadline: thread ids and its own check before the run
    $s =~ s/(deadline thread |main thread )\d+/$1N/g;
    $s =~ s/thread\[\d+\]/thread[N]/g;
    $s =~ s/(Tested at )\d+us/$1Nus/g;
    # ptsematest
    $s =~ s/\bID\d+/IDN/g;
    $s =~ s/(Cycles )\d+/$1N/g;
    $s =~ s/((?:Min|Cur|Avg|Max) )( *\d+)/$1.$w->($2)/ge;
    # oslat: "%12s:\t" then " %value" per CPU, unpadded: each value is one
    # N, the label, tab, spaces, column count and unit compared exactly
    if ($s =~ /^( *(?:Counter Freq|Minimum|Average|Maximum|Max-Min|Duration):\t)((?: \d+(?:\.\d+)?)+)( .*\n)$/) {
      my ($label, $values, $unit) = ($1, $2, $3);
      $values =~ s/\d+(?:\.\d+)?/N/g;
      $s = "$label$values$unit";
    }
    # -B: the bias is measured; the label of row j is bias + j + 1, so it is
    # compared as b+(j + 1), which checks it against the bias printed
    if ($s =~ s/^(Global bias set to )(\d+)( \(us\))$/$1N$3/) { $bias = $2; }
    # bucket rows: "%03d (us)" right-aligned in 12 columns, then the counts
    if ($s =~ /^( *)(\d{3,}) \(us\):\t((?: \d+)+)( \(including overflows\))?$/) {
      my ($pad, $label, $counts, $last) = ($1, $2, $3, $4 // "");
      $counts =~ s/\d+/N/g;
      if (length($pad) + length($label) == 7) {
        $label = defined $bias ? sprintf("%7s", "b+" . ($label - $bias)) : "$pad$label";
        # -z: which rows appear is measured (a row is left out when every
        # CPU counted 0 there); the index of such a row is masked, and the
        # run of rows and `    ...` lines is compared as one line below
        $label = "      Z" if $ENV{MASK_ZERO_OMIT} && !$last;
        $s = "$label (us):\t$counts$last\n";
      } else {
        $s = "$pad$label (us):\t$counts$last\n";
      }
    }
    # pi_stress: counts and the length of the run
    $s =~ s/(Current Inversions: |Total inversion performed: )\d+/$1N/g;
    $s =~ s/^(Test Duration: )\d+ days, \d+ hours, \d+ minutes, \d+ seconds/$1T/;
    # rt-migrate-test: each padded figure of the Iter: table is one N, pids, the summaries
    if ($s =~ /^( *\d+:   | len:   | loops: )(.*\n)$/) { my ($p, $r) = ($1, $2); $r =~ s/ *\d+  /N  /g; $s = "$p$r"; }
    $s =~ s/^(Parent pid: )\d+/$1N/;
    $s =~ s/(\(pid )\d+\)/$1N)/;
    $s =~ s/^(   (?:Max|Min|Tot|Avg):) *(?:N+|\d+)( us)$/$1 N$2/;
    $s =~ s/(Trace threshold \(\d+ us\) triggered on cpu \d+ with )\d+( us!)/$1N$2/;
    # the oslat and ptsematest of latscope print its validity warnings (not
    # isolated, no RT, a VM) and its `context:` line on stderr, on purpose
    # (docs/compat.md, oslat and ptsematest); neither original prints a
    # `warning: ` or `context: ` line, so they are left out of both sides
    $s = "" if $ENV{MASK_WARNINGS} && $s =~ /^(?:warning|context): /;
    }
    # -z: a run of rows with a masked index and `    ...` lines (each line of
    # it checked above for its exact shape: label width, tab, one count per
    # CPU) counts as one line; how many rows it has is measured.
    # The last row (including overflows), always printed, stays exact.
    if ($ENV{MASK_ZERO_OMIT}) {
      # Two `    ...` lines in a row (oslat prints one per gap) stay apart.
      my @out; my $in_run = 0; my $prev = "";
      for my $l (@lines) {
        if ($l =~ /^      Z \(us\):\t(?: N)+\n$/ || ($l eq "    ...\n" && $prev ne $l)) {
          push @out, "    [-z rows]\n" unless $in_run;
          $in_run = 1;
        } else {
          push @out, $l;
          $in_run = 0;
        }
        $prev = $l;
      }
      @lines = @out;
    }
    # cyclicdeadline: its threads and main thread print these as they start,
    # in an order that varies from run to run: each run of them is compared
    # as a set (across lines, so after the line-by-line masks above)
    my @sorted; my @set;
    for my $l (@lines, "") {
      if ($l =~ /^(?:deadline thread|thread\[|main thread)/) { push @set, $l; next; }
      push @sorted, sort @set; @set = ();
      push @sorted, $l;
    }
    print @sorted;
  ' "$1" "$2"
}

# The running display: each redraw starts with ESC [ n A; redraws that are
# equal once masked are one.
squeeze_redraws() {
  perl -e '
    local $/; my $s = <STDIN>; $s = "" unless defined $s;
    my @parts = split /(?=\e\[\d+A)/, $s;
    my @out; my $prev = "\0";
    for my $p (@parts) { push @out, $p unless $p eq $prev; $prev = $p; }
    print join("", @out);
  '
}

# Files left in DIR: one line per file (name, type) then the masked content.
files_of() { # DIR
  local dir=$1 f
  ( cd "$dir" && find . -mindepth 1 | LC_ALL=C sort ) | while IFS= read -r f; do
    local p="$dir/$f"
    if [ -p "$p" ]; then echo "== $f (fifo)"
    elif [ -d "$p" ]; then echo "== $f (dir)"
    else
      echo "== $f ($(stat -c %a "$p"))"
      case $f in
        *.json) mask json "$dir" < "$p" ;;
        *) mask text "$dir" < "$p" ;;
      esac
      echo
    fi
  done
}

TRACING_ON=/sys/kernel/tracing/tracing_on
run_side() { # SIDE TOOL ARGVSTRING -> $WORK/SIDE/{out,err,rc,files}
  local side=$1 tool=$2 argv=$3
  local base="$WORK/$side" dir="$WORK/$side/run"
  rm -rf "$dir" && mkdir -p "$dir"
  local -a args
  eval "args=(${argv//@D@/$dir})"
  # which values are measured depends on the options (see mask)
  MASK_COUNTS=""; MASK_CPU=""; MASK_ZERO_OMIT=""; MASK_WARNINGS=""
  case " $argv " in *" -o "*) MASK_COUNTS=1 ;; esac
  if [ "$tool" = ptsematest ]; then
    MASK_WARNINGS=1
    case " $argv " in *" -a"*|*" --aff"*|*" -S"*|*" --smp"*|*-qS*) ;; *) MASK_CPU=1 ;; esac
  fi
  if [ "$tool" = oslat ]; then
    MASK_WARNINGS=1
    # -z alone, in a cluster (-zqB) or long (--zero-omit, --z...)
    if [[ " $argv " =~ \ -[A-Za-z0-9]*z || " $argv " =~ \ --z ]]; then MASK_ZERO_OMIT=1; fi
  fi
  export MASK_COUNTS MASK_CPU MASK_ZERO_OMIT MASK_WARNINGS
  local tracing_was=""
  [ -r "$TRACING_ON" ] && tracing_was=$(cat "$TRACING_ON" 2>/dev/null)
  ( cd "$dir" && exec env PATH="$base/bin:$PATH" timeout -k 2 15 "$tool" "${args[@]}" \
      </dev/null >"$base/out.raw" 2>"$base/err.raw" )
  echo $? >"$base/rc"
  # oslat's -T (and cyclictest's -b) stop the kernel tracer: put it back
  [ -n "$tracing_was" ] && echo "$tracing_was" >"$TRACING_ON" 2>/dev/null
  mask text "$dir" <"$base/out.raw" | squeeze_redraws >"$base/out"
  mask text "$dir" <"$base/err.raw" >"$base/err"
  files_of "$dir" >"$base/files"
  # what the consumers' parsers (bench/dropin_parsers.py) get out of it
  local json
  json=$(find "$dir" -maxdepth 1 -name '*.json' -type f | LC_ALL=C sort | head -1)
  python3 "$REPO/bench/dropin_parsers.py" "$base/out.raw" ${json:+"$json"} >"$base/parsed" 2>&1
  # a -F pipe or anything else the tool made goes with the run
  rm -rf "$dir"
}

compare_once() { # TOOL ARGV -> 0 same, 1 different (details in $WORK/diff)
  run_side real "$1" "$2"
  run_side ours "$1" "$2"
  : >"$WORK/diff"
  local what
  for what in rc out err files parsed; do
    if ! cmp -s "$WORK/real/$what" "$WORK/ours/$what"; then
      echo "--- $what (real / ours)" >>"$WORK/diff"
      diff -a "$WORK/real/$what" "$WORK/ours/$what" | head -20 >>"$WORK/diff"
    fi
  done
  [ ! -s "$WORK/diff" ]
}

pass=0 fail=0 known=0 ran=0
FAILED=()
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]}
  if [ -n "$ONLY" ] && ! grep -qE -- "$ONLY" <<<"$name"; then continue; fi
  ran=$((ran + 1))
  if compare_once "${TOOLS[$i]}" "${ARGVS[$i]}" ||
    { [ -z "${KNOWN[$i]}" ] && compare_once "${TOOLS[$i]}" "${ARGVS[$i]}"; }; then
    if [ -n "${KNOWN[$i]}" ]; then
      echo "SAME   $name (marked known: ${KNOWN[$i]})"
    else
      echo "SAME   $name"
    fi
    pass=$((pass + 1))
  elif [ -n "${KNOWN[$i]}" ]; then
    echo "KNOWN  $name: ${KNOWN[$i]}"
    known=$((known + 1))
  else
    echo "DIFF   $name: ${TOOLS[$i]} ${ARGVS[$i]}"
    sed 's/^/       /' "$WORK/diff"
    fail=$((fail + 1))
    FAILED+=("$name")
  fi
  if [ -n "$KEEP" ]; then
    mkdir -p "$WORK/cases/$name"
    cp "$WORK"/real/out "$WORK/cases/$name/real.out"; cp "$WORK"/ours/out "$WORK/cases/$name/ours.out"
    cp "$WORK"/real/err "$WORK/cases/$name/real.err"; cp "$WORK"/ours/err "$WORK/cases/$name/ours.err"
    cp "$WORK"/real/files "$WORK/cases/$name/real.files"; cp "$WORK"/ours/files "$WORK/cases/$name/ours.files"
    cp "$WORK"/real/rc "$WORK/cases/$name/real.rc"; cp "$WORK"/ours/rc "$WORK/cases/$name/ours.rc"
  fi
done
echo "cases: $ran, same: $pass, known differences: $known, different: $fail"
[ "$fail" -eq 0 ]

//! The EXAMPLES that end each subcommand's `--help` (and, through
//! clap_mangen, its man page's EXTRA section), as git's and hyperfine's
//! help end. Every line runs as written: `cli`'s tests parse each one.

pub const MQ: &str = "Examples:
  latscope mq -S -p99 -i100 -l 20000        # one pair per CPU, as pmqtest -S
  latscope mq -p 90 -D 30s --json mq.json   # one pair for 30 s, the results as JSON
  latscope mq --mode roundtrip --fork -D 10 # the round trip to a peer process";

pub const SEM: &str = "Examples:
  latscope sem -p 90 -i 5000 -I 200         # semtest's options: 5000 round trips per pair
  latscope sem --mode oneway -D 10s         # one-way wake-ups for 10 s";

pub const SIGNAL: &str = "Examples:
  latscope signal -t 2 -p 80 -l 20000       # two pairs, as sigwaittest
  latscope signal --cross-cpu -p 99 -D 10   # the wake-up from another CPU";

pub const SVSEM: &str = "Examples:
  latscope svsem -S -p99 -i100 -l 20000     # one pair per CPU, as svsematest -S
  latscope svsem -f -p 90 -D 10             # the peer in a child process";

pub const MUTEX: &str = "Examples:
  latscope mutex -S -p99 -i100 -l 20000     # one pair per CPU, as ptsematest -S
  latscope mutex -p 90 -D 10 --json mutex.json";

/// pipe, eventfd, futex, unix and svmq take the same options.
macro_rules! pair_examples {
    ($name:literal) => {
        concat!(
            "Examples:\n  latscope ",
            $name,
            " -p 99 -l 20000                # one pair at SCHED_FIFO 99\n  latscope ",
            $name,
            " -S -p 90 -D 10 --fork         # one pair per CPU, peers in processes\n  latscope ",
            $name,
            " --cross-cpu -p 99 -D 10       # the wake-up from another CPU"
        )
    };
}

pub const PIPE: &str = pair_examples!("pipe");
pub const EVENTFD: &str = pair_examples!("eventfd");
pub const FUTEX: &str = pair_examples!("futex");
pub const UNIX: &str = pair_examples!("unix");
pub const SVMQ: &str = pair_examples!("svmq");

pub const IPC: &str = "Examples:
  latscope ipc -D 10s                       # every primitive, both modes, one table
  latscope ipc --only futex,pipe --mode oneway -p 99 -D 5
  latscope ipc --cross-cpu --fork -D 20s --json ipc.json";

pub const TIMER: &str = "Examples:
  latscope timer -D 60                      # CPU 0, 100 us period, one minute
  latscope timer --smp -D 10m --json t.json # one thread per usable CPU (cyclictest -S)
  latscope timer --breakdown -D 30          # where each wake-up's latency was spent";

pub const CYCLICTEST: &str = "Examples:
  latscope cyclictest -m -Sp90 -i200 -l10000 -q
  latscope cyclictest -t1 -p 80 -D 10 -h 100";

pub const CYCLICDEADLINE: &str = "Examples:
  latscope cyclicdeadline -D 10 -q          # one thread, 1 ms deadline, 10 s
  latscope cyclicdeadline -t 2 -i 4000 -s 1000 -D 1m --json=dl.json";

pub const OSLAT: &str = "Examples:
  latscope oslat -D 10 -c 1                 # CPU 1 for 10 s
  latscope oslat -D 30 -c 1 -z              # without the empty buckets";

pub const SIGNALTEST: &str = "Examples:
  latscope signaltest -p 90 -l 10000 -q     # two threads at SCHED_FIFO 90
  latscope signaltest -t 4 -p 80 -D 10 --json=signal.json";

pub const PI_STRESS: &str = "Examples:
  latscope pi-stress -D 10 -q               # one group per CPU but the first, 10 s
  latscope pi-stress -q --duration 1m --mlockall --json=pi.json
  latscope pi-stress -q -i 1000 --latscope-json=pi-report.json   # + inversion latency per group";

pub const RT_MIGRATE_TEST: &str = "Examples:
  latscope rt-migrate-test -l 20 -c         # 20 rounds, fail when a task starts late
  latscope rt-migrate-test -q -p 50 -c --json=migrate.json";

pub const NOISE: &str = "Examples:
  latscope noise --cpus 1 -D 10s            # what the system takes from CPU 1
  latscope noise --cpus 1-3 -D 1m --trace-spikes 20 --json noise.json";

pub const HWLAT: &str = "Examples:
  latscope hwlat -D 60                      # every CPU, 500 ms of every 1 s, gaps above 10 us
  latscope hwlat --cpu 1 -D 10m --json hw.json --fail-if 'max>50us'
  latscope hwlat -D 60 --format hwnoise     # rtla hwnoise's table";

pub const HWLATDETECT: &str = "Examples:
  latscope hwlatdetect --duration 15s --threshold 20 --hardlimit 20
  latscope hwlatdetect --duration 60 --window 10000000us --width 950000us --report hw.txt";

pub const LOGDISK: &str = "Examples:
  latscope logdisk --dir /var/tmp -D 10     # 4 KiB O_DSYNC writes for 10 s
  latscope logdisk --dir=/mnt/log --bsize=4K,64K --fileSize=16M --numFiles=2 --duration=3";

pub const SUITE: &str = "Examples:
  latscope suite                            # every test briefly (10 s)
  latscope suite -D 1m --json overview.json --max-latency 1000";

pub const COMPARE: &str = "Examples:
  latscope compare base.json new.json
  latscope compare new.json --base a.json --base b.json --base c.json
  latscope compare base.json new.json --fail-if 'p99>+10%'";

pub const REPORT: &str = "Examples:
  latscope report run.json -o run.html
  latscope report mq.json timer.json -o report.html --svg plots";

pub const SAMPLES: &str = "Examples:
  latscope samples run.smpl                 # every sample as CSV on standard output
  latscope samples run.smpl --csv run.csv";

pub const DOCTOR: &str =
    "Exit codes: 0 nothing is bad (warnings allowed), 3 at least one check is bad, \
1 the JSON file could not be written, 2 bad usage. Every check is described in docs/doctor.md.

Examples:
  latscope doctor                           # each setting, its value, the fix
  latscope doctor --quiet --explain         # only what is not ok, and why it matters";

/// `cleanup`'s examples: its short help, and the end of its long help
/// (`CLEANUP_HOW`, which says how it tells latscope's objects apart).
macro_rules! cleanup_examples {
    () => {
        "Examples:
  latscope cleanup --dry-run                # list what a killed run left, change nothing
  latscope cleanup --dir /var/tmp/logtest   # remove it, test files under the directory too"
    };
}

pub const CLEANUP: &str = cleanup_examples!();

pub const COMPLETIONS: &str = "Examples:
  latscope completions bash > /usr/share/bash-completion/completions/latscope
  latscope completions zsh > ~/.zfunc/_latscope";

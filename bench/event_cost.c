// The cost of one kernel event to the task that causes it: CPU time per call
// of a system call that fires the event, pinned to one CPU. Programs attached
// to the event (latscope's BPF breakdown) add their run time, and the
// kernel's cost of running them, to each call.
//
//   event_cost KIND CPU CALLS
//     timerfd  timerfd_settime: arms an hrtimer (hrtimer_start), after
//              cancelling the one armed by the call before
//     yield    sched_yield: one pass through __schedule() (sched_exit_tp),
//              without a switch when the task is alone on its CPU
//
// Prints "KIND CPU CPU_NS_PER_CALL MIN_CHUNK_NS_PER_CALL": the thread's CPU
// time per call over all calls, and over the cheapest chunk of 5,000 calls.
// On a busy machine other tasks on the CPU evict caches and stretch some
// chunks; the cheapest chunk is the one they disturbed least, the steadier
// figure to compare. Build:
//   gcc -O2 -o event_cost bench/event_cost.c
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s timerfd|yield CPU CALLS\n", argv[0]);
    return 2;
  }
  const char *kind = argv[1];
  int cpu = atoi(argv[2]);
  long calls = atol(argv[3]);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    return 1;
  }
  int fd = -1;
  // A relative expiry 100 s away: armed by every call, never fires.
  struct itimerspec far = {{0, 0}, {100, 0}};
  if (!strcmp(kind, "timerfd")) {
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0) {
      perror("timerfd_create");
      return 1;
    }
  } else if (strcmp(kind, "yield")) {
    fprintf(stderr, "unknown kind %s\n", kind);
    return 2;
  }
  const long chunk = 5000;
  double start = now_ns(CLOCK_THREAD_CPUTIME_ID), cheapest = -1;
  for (long done = 0; done < calls; done += chunk) {
    double before = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < chunk; i++) {
      if (fd >= 0)
        timerfd_settime(fd, 0, &far, NULL);
      else
        sched_yield();
    }
    double spent = now_ns(CLOCK_THREAD_CPUTIME_ID) - before;
    if (cheapest < 0 || spent < cheapest)
      cheapest = spent;
  }
  long made = (calls + chunk - 1) / chunk * chunk;
  double total = now_ns(CLOCK_THREAD_CPUTIME_ID) - start;
  printf("%s %d %.1f %.1f\n", kind, cpu, total / made, cheapest / chunk);
  return 0;
}

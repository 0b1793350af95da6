/*
 * mq_wake_order: is the latscope/pmqtest difference in the tools or in the
 * order of events? One sender/receiver pair on one CPU, both SCHED_FIFO at the
 * same priority, POSIX message queues, CLOCK_MONOTONIC stamps in nanoseconds
 * (the stamp travels in the 8-byte message), measured two ways:
 *
 *   sender-sleeps   (latscope's order) the sender sleeps until the next
 *                   period, stamps, mq_send; the receiver stamps after
 *                   mq_receive and hands the turn back at once.
 *   receiver-sleeps (pmqtest's order) the receiver stamps after mq_receive,
 *                   sleeps the interval, then hands the turn back; the sender,
 *                   woken by that hand-back, stamps and mq_sends at once.
 *
 * Build and run (root):
 *   gcc -O2 -pthread -o /tmp/mq_wake_order bench/mq_wake_order.c -lrt
 *   /tmp/mq_wake_order CPU INTERVAL_US LOOPS PRIO
 * Prints one line per order: samples, min/avg/max in microseconds.
 * A diagnostic for docs/benchmarks.md, not part of latscope.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int cpu, prio;
static long interval_ns, loops;
static int receiver_sleeps;
static mqd_t testq, syncq;
static uint64_t min_ns = UINT64_MAX, max_ns, count;
static double sum_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void setup_thread(void)
{
	cpu_set_t set;
	struct sched_param sp = { .sched_priority = prio };

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("affinity/scheduler");
		exit(1);
	}
}

static void sleep_abs(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000u, .tv_nsec = t % 1000000000u };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *sender(void *arg)
{
	uint64_t stamp, next = now_ns() + interval_ns, buf;
	long i;

	(void)arg;
	setup_thread();
	for (i = 0; i < loops; i++) {
		if (receiver_sleeps) {
			if (i > 0 && mq_receive(syncq, (char *)&buf, 8, NULL) != 8)
				exit(2);
		} else {
			sleep_abs(next);
			next += interval_ns;
		}
		stamp = now_ns();
		if (mq_send(testq, (char *)&stamp, 8, 0))
			exit(3);
		if (!receiver_sleeps && mq_receive(syncq, (char *)&buf, 8, NULL) != 8)
			exit(4);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	uint64_t stamp, d, buf = 0;
	struct timespec rel = { .tv_sec = interval_ns / 1000000000, .tv_nsec = interval_ns % 1000000000 };
	long i;

	(void)arg;
	setup_thread();
	for (i = 0; i < loops; i++) {
		if (mq_receive(testq, (char *)&stamp, 8, NULL) != 8)
			exit(5);
		d = now_ns() - stamp;
		count++;
		sum_ns += d;
		if (d < min_ns)
			min_ns = d;
		if (d > max_ns)
			max_ns = d;
		if (receiver_sleeps)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
		if (i + 1 < loops || !receiver_sleeps)
			if (mq_send(syncq, (char *)&buf, 8, 0))
				exit(6);
	}
	return NULL;
}

static void run(int mode)
{
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 8 };
	char tname[64], sname[64];
	pthread_t r, s;

	snprintf(tname, sizeof(tname), "/mq_wake_order-%d-t", getpid());
	snprintf(sname, sizeof(sname), "/mq_wake_order-%d-s", getpid());
	testq = mq_open(tname, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
	syncq = mq_open(sname, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
	if (testq == (mqd_t)-1 || syncq == (mqd_t)-1) {
		perror("mq_open");
		exit(1);
	}
	mq_unlink(tname);
	mq_unlink(sname);
	receiver_sleeps = mode;
	min_ns = UINT64_MAX;
	max_ns = count = 0;
	sum_ns = 0;
	pthread_create(&r, NULL, receiver, NULL);
	usleep(10000); /* receiver blocked in mq_receive first, as in both tools */
	pthread_create(&s, NULL, sender, NULL);
	pthread_join(s, NULL);
	pthread_join(r, NULL);
	mq_close(testq);
	mq_close(syncq);
	printf("%-16s cpu %d interval %ld us: samples %lu min %.2f avg %.2f max %.2f us\n",
	       mode ? "receiver-sleeps" : "sender-sleeps", cpu, interval_ns / 1000,
	       (unsigned long)count, min_ns / 1e3, sum_ns / count / 1e3, max_ns / 1e3);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s CPU INTERVAL_US LOOPS PRIO\n", argv[0]);
		return 2;
	}
	cpu = atoi(argv[1]);
	interval_ns = atol(argv[2]) * 1000;
	loops = atol(argv[3]);
	prio = atoi(argv[4]);
	if (loops < 1 || interval_ns < 1000) {
		fprintf(stderr, "LOOPS >= 1, INTERVAL_US >= 1\n");
		return 2;
	}
	mlockall(MCL_CURRENT | MCL_FUTURE);
	run(0);
	run(1);
	return 0;
}

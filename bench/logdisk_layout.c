/*
 * logdisk_layout: does the way a test file was written out before measuring
 * change what its measured O_DSYNC|O_DIRECT overwrites cost? latscope's
 * write loop without latscope: two 16 MiB files, one pwrite of BS bytes at a
 * time, sequentially through the files, for SECONDS; the files are first
 * written out one of three ways:
 *
 *   direct    1 MiB pwrites on the O_DSYNC|O_DIRECT descriptor (latscope
 *             logdisk before 2026-11-23)
 *   buffered  1 MiB buffered pwrites, fdatasync, POSIX_FADV_DONTNEED, then
 *             reopened O_DSYNC|O_DIRECT (fio's layout; latscope's since)
 *   small     BS-sized pwrites on the O_DSYNC|O_DIRECT descriptor
 *
 * Build and run (DIR on the disk to test; the files are removed):
 *   gcc -O2 -o /tmp/logdisk_layout bench/logdisk_layout.c
 *   for i in 1 2 3 4; do for l in direct buffered; do
 *     /tmp/logdisk_layout DIR 5 65536 $l; done; done
 * Prints: layout, IOPS, average and minimum latency (us).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (16L << 20)
#define PIECE (1L << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *aligned(long len)
{
	void *p;
	if (posix_memalign(&p, 4096, len)) {
		perror("posix_memalign");
		exit(1);
	}
	for (long i = 0; i < len; i++)
		((unsigned char *)p)[i] = (unsigned char)(i % 251) ^ 0x5a;
	return p;
}

static void must(long ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

static void write_all(int fd, void *buf, long piece)
{
	for (long o = 0; o < FILE_SIZE; o += piece)
		must(pwrite(fd, buf, piece, o) == piece, "write out");
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s DIR SECONDS BS direct|buffered|small\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1], *layout = argv[4];
	double seconds = atof(argv[2]);
	long bs = atol(argv[3]);
	void *block = aligned(bs), *piece = aligned(PIECE);
	const int sync_direct = O_RDWR | O_DSYNC | O_DIRECT;
	char path[2][4096];
	int fd[2];
	for (int i = 0; i < 2; i++) {
		snprintf(path[i], sizeof path[i], "%s/logdisk_layout.%d", dir, i);
		if (!strcmp(layout, "buffered")) {
			int plain = open(path[i], O_RDWR | O_CREAT | O_EXCL, 0600);
			must(plain >= 0, path[i]);
			write_all(plain, piece, PIECE);
			must(fdatasync(plain) == 0, "fdatasync");
			posix_fadvise(plain, 0, 0, POSIX_FADV_DONTNEED);
			close(plain);
			fd[i] = open(path[i], sync_direct);
			must(fd[i] >= 0, path[i]);
		} else {
			fd[i] = open(path[i], sync_direct | O_CREAT | O_EXCL, 0600);
			must(fd[i] >= 0, path[i]);
			if (!strcmp(layout, "small"))
				write_all(fd[i], block, bs);
			else
				write_all(fd[i], piece, PIECE);
		}
	}
	long writes = 0, offset = 0;
	int f = 0;
	double sum = 0, min = 1e9, start = now(), end = start + seconds, t1 = start;
	while (t1 < end) {
		if (offset + bs > FILE_SIZE) {
			offset = 0;
			f ^= 1;
		}
		double t0 = now();
		must(pwrite(fd[f], block, bs, offset) == bs, "measured write");
		t1 = now();
		sum += t1 - t0;
		if (t1 - t0 < min)
			min = t1 - t0;
		writes++;
		offset += bs;
	}
	printf("%-8s iops %.0f avg %.1f us min %.1f us\n", layout, writes / (t1 - start),
	       sum / writes * 1e6, min * 1e6);
	for (int i = 0; i < 2; i++) {
		close(fd[i]);
		unlink(path[i]);
	}
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * obs_job.c - a busy synthetic job for the observe overhead benchmark:
 * random 4 KiB O_DIRECT reads from a block device by io_uring threads and
 * pread threads, a TCP loopback stream, and a thread that hops between
 * CPUs.  Prints what it did per second, so observed and unobserved runs
 * compare on throughput as well as on CPU.
 *
 * usage: obs_job DEVICE SECONDS [READS_PER_SECOND]   (0 or none: as fast as it goes)
 */
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *dev;
static atomic_int stop;
static atomic_ullong reads, net_bytes, hops;
static off_t dev_blocks;
static double per_thread_rate; /* reads/s per reader thread, 0: unpaced */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sleeps while this thread is ahead of its share of the target rate. */
static void pace(double t0, unsigned long long done)
{
	double ahead;

	if (!per_thread_rate || done % 32)
		return;
	ahead = (double)done / per_thread_rate - (now_s() - t0);
	if (ahead > 0)
		usleep((useconds_t)(ahead * 1e6));
}

static void *pread_main(void *arg)
{
	void *buf;
	unsigned seed = (unsigned)(uintptr_t)arg;
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, 4096, 4096))
		return NULL;
	double t0 = now_s();

	for (unsigned long long done = 1; !atomic_load(&stop); done++) {
		if (pread(fd, buf, 4096, (off_t)(rand_r(&seed) % dev_blocks) * 4096) == 4096)
			atomic_fetch_add(&reads, 1);
		pace(t0, done);
	}
	close(fd);
	free(buf);
	return NULL;
}

static void *uring_main(void *arg)
{
	enum { QD = 16 };
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct io_uring ring;
	void *buf;
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, 4096, QD * 4096) || io_uring_queue_init(QD, &ring, 0))
		return NULL;
	for (int i = 0; i < QD; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, fd, (char *)buf + i * 4096, 4096,
				   (off_t)(rand_r(&seed) % dev_blocks) * 4096);
		io_uring_sqe_set_data64(sqe, (uint64_t)i);
	}
	io_uring_submit(&ring);
	double t0 = now_s();

	for (unsigned long long done = 1; !atomic_load(&stop); done++) {
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;
		uint64_t slot;

		if (io_uring_wait_cqe(&ring, &cqe))
			break;
		slot = io_uring_cqe_get_data64(cqe);
		if (cqe->res == 4096)
			atomic_fetch_add(&reads, 1);
		io_uring_cqe_seen(&ring, cqe);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, (char *)buf + slot * 4096, 4096,
				   (off_t)(rand_r(&seed) % dev_blocks) * 4096);
		io_uring_sqe_set_data64(sqe, slot);
		io_uring_submit(&ring);
		pace(t0, done);
	}
	io_uring_queue_exit(&ring);
	close(fd);
	free(buf);
	return NULL;
}

static int lfd;

static void *net_rx(void *arg)
{
	char buf[65536];
	int fd = accept(lfd, NULL, NULL);
	ssize_t n;

	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		atomic_fetch_add(&net_bytes, (unsigned long long)n);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void *net_tx(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	static char buf[16384];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timespec ts = { 0, 1000 * 1000 };

	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return NULL;
	/* A paced stream (16 KiB per ms), like a bootstrap or socket transport, not a saturating one. */
	while (!atomic_load(&stop)) {
		if (write(fd, buf, sizeof(buf)) <= 0)
			break;
		nanosleep(&ts, NULL);
	}
	close(fd);
	return NULL;
}

static void *hopper(void *arg)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec ts = { 0, 1000 * 1000 };

	for (long i = 0; !atomic_load(&stop); i++) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(i % n, &set);
		sched_setaffinity(0, sizeof(set), &set);
		atomic_fetch_add(&hops, 1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pthread_t th[8];
	int n = 0, secs, fd;

	if (argc < 3)
		return 2;
	dev = argv[1];
	secs = atoi(argv[2]);
	per_thread_rate = argc > 3 ? atof(argv[3]) / 4 : 0;
	fd = open(dev, O_RDONLY);
	dev_blocks = lseek(fd, 0, SEEK_END) / 4096;
	close(fd);
	if (dev_blocks <= 0)
		return 1;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
	listen(lfd, 1);
	pthread_create(&th[n++], NULL, net_rx, NULL);
	pthread_create(&th[n++], NULL, net_tx, NULL);
	pthread_create(&th[n++], NULL, hopper, NULL);
	for (uintptr_t i = 0; i < 2; i++) {
		pthread_create(&th[n++], NULL, uring_main, (void *)(i + 1));
		pthread_create(&th[n++], NULL, pread_main, (void *)(i + 11));
	}
	sleep((unsigned)secs);
	atomic_store(&stop, 1);
	shutdown(lfd, SHUT_RDWR);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("reads/s %.0f  net MB/s %.1f  hops/s %.0f\n", (double)reads / secs,
	       (double)net_bytes / secs / 1e6, (double)hops / secs);
	return 0;
}

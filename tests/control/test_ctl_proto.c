/*
 * test_ctl_proto.c - the control protocol and server on their own: framing,
 * record encoding, refusal of malformed/oversized/unknown-version requests,
 * peer-credential checks against another uid, and a stuck client that
 * must not stall a second one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "control/ctl_server.h"
#include "ncclbpf/runtime.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Echoes the request's first record back as an "echo" record; type CALLS fails. */
static int echo_handler(void *user, const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *resp,
			char *errmsg, size_t errlen)
{
	(*(int *)user)++;
	if (req->type == NBPF_CTL_CALLS) {
		snprintf(errmsg, errlen, "calls failed on purpose");
		return -EIO;
	}
	nbpf_ctl_buf_rec(resp, "echo");
	nbpf_ctl_buf_u64(resp, "type", req->type);
	nbpf_ctl_buf_u64(resp, "recs", req->n_recs);
	for (uint32_t i = 0; req->n_recs && i < req->recs[0].n_kv; i++)
		nbpf_ctl_buf_str(resp, req->recs[0].kv[i].key, req->recs[0].kv[i].val);
	return 0;
}

static void test_frames(void)
{
	uint8_t h[NBPF_CTL_HDR_SIZE];
	struct nbpf_ctl_hdr d;

	nbpf_ctl_hdr_encode(h, NBPF_CTL_PS, 77);
	CHECK(nbpf_ctl_hdr_decode(h, 100, &d) == 0);
	CHECK(d.type == NBPF_CTL_PS && d.len == 77 && d.version == NBPF_CTL_VERSION);
	CHECK(!memcmp(h, "NBPC", 4));
	CHECK(nbpf_ctl_hdr_decode(h, 76, &d) == -EMSGSIZE);
	h[4] = 9;
	CHECK(nbpf_ctl_hdr_decode(h, 100, &d) == -EPROTONOSUPPORT);
	h[0] = 'X';
	CHECK(nbpf_ctl_hdr_decode(h, 100, &d) == -EPROTO);
}

static void test_records(void)
{
	struct nbpf_ctl_buf b = { 0 };
	struct nbpf_ctl_msg m;
	const char *weird = "a b=c%d\ne\t\x01\xff/x:y";
	uint64_t v[8], u;
	int64_t i;

	nbpf_ctl_buf_rec(&b, "one");
	nbpf_ctl_buf_str(&b, "s", weird);
	nbpf_ctl_buf_u64(&b, "u", 18446744073709551615ull);
	nbpf_ctl_buf_i64(&b, "i", -22);
	nbpf_ctl_buf_x64(&b, "x", 0xabcdefull);
	nbpf_ctl_buf_rec(&b, "two");
	nbpf_ctl_buf_u64s(&b, "l", (uint64_t[]){ 1, 0, 300 }, 3);
	nbpf_ctl_buf_str(&b, "empty", "");
	CHECK(b.err == 0);
	CHECK(nbpf_ctl_msg_parse(1, b.data, b.len, &m) == 0);
	CHECK(m.n_recs == 2);
	if (m.n_recs == 2) {
		CHECK(!strcmp(m.recs[0].kind, "one") && !strcmp(m.recs[1].kind, "two"));
		CHECK(!strcmp(nbpf_ctl_rec_get(&m.recs[0], "s"), weird));
		CHECK(nbpf_ctl_rec_u64(&m.recs[0], "u", &u) == 0 && u == 18446744073709551615ull);
		CHECK(nbpf_ctl_rec_i64(&m.recs[0], "i", &i) == 0 && i == -22);
		CHECK(nbpf_ctl_rec_u64(&m.recs[0], "i", &u) == -EINVAL);
		CHECK(nbpf_ctl_rec_u64(&m.recs[0], "x", &u) == 0 && u == 0xabcdef);
		CHECK(nbpf_ctl_rec_u64(&m.recs[0], "nope", &u) == -ENOENT);
		CHECK(nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(&m.recs[1], "l"), v, 8) == 3 && v[2] == 300);
		CHECK(nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(&m.recs[1], "l"), v, 2) == -EINVAL);
		CHECK(!strcmp(nbpf_ctl_rec_get(&m.recs[1], "empty"), ""));
	}
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);

	/* Malformed payloads. */
	static const char *bad[] = {
		"rec novalue", "rec =v", "rec K=v", "rec k=%4", "rec k=%zz", "rec k=%00", "Kind a=1",
		"rec a-b=1",
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		CHECK_MSG(nbpf_ctl_msg_parse(1, bad[k], strlen(bad[k]), &m) == -EBADMSG, "%s", bad[k]);
		nbpf_ctl_msg_free(&m);
	}
	CHECK(nbpf_ctl_msg_parse(1, "a\0b", 3, &m) == -EBADMSG);
	nbpf_ctl_msg_free(&m);
	CHECK(nbpf_ctl_msg_parse(1, "\n\n  \nx\n", 7, &m) == 0 && m.n_recs == 1);
	nbpf_ctl_msg_free(&m);
	CHECK(nbpf_ctl_parse_u64s("1,,2", v, 8) == -EINVAL);
	CHECK(nbpf_ctl_parse_u64s("1,2,", v, 8) == -EINVAL);
	CHECK(nbpf_ctl_parse_u64s("", v, 8) == 0);

	/* A buffer refuses to grow past its limit and says so. */
	b = (struct nbpf_ctl_buf){ .max = 64 };
	for (int k = 0; k < 20; k++)
		nbpf_ctl_buf_str(&b, "key", "0123456789");
	CHECK(b.err == -EMSGSIZE && b.len < 64);
	nbpf_ctl_buf_free(&b);
}

static int connect_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Sends raw bytes and reads a whole response frame; returns its status err. */
static int raw_exchange(const char *path, const void *data, size_t len, char *msg, size_t msglen)
{
	int fd = connect_path(path);
	uint8_t hdr[NBPF_CTL_HDR_SIZE], body[4096];
	struct nbpf_ctl_hdr h;
	struct nbpf_ctl_msg m;
	size_t got = 0;
	int err = -999;

	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, data, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto out;
	while (got < sizeof(hdr)) {
		ssize_t n = recv(fd, hdr + got, sizeof(hdr) - got, 0);

		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	if (nbpf_ctl_hdr_decode(hdr, sizeof(body), &h))
		goto out;
	got = 0;
	while (got < h.len) {
		ssize_t n = recv(fd, body + got, h.len - got, 0);

		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	if (nbpf_ctl_msg_parse(h.type, body, h.len, &m) == 0) {
		const char *em;

		err = nbpf_ctl_msg_status(&m, &em);
		snprintf(msg, msglen, "%s", em);
	}
	nbpf_ctl_msg_free(&m);
out:
	close(fd);
	return err;
}

static void test_server(const char *dir)
{
	struct nbpf_ctl_server_opts opts = { .dir = dir, .handler = echo_handler,
					     .client_timeout_ms = 800 };
	struct nbpf_ctl_server *srv = NULL;
	struct nbpf_ctl_server_stats st;
	struct nbpf_ctl_msg m;
	const char *em;
	char path[256], msg[512];
	uint8_t frame[64];
	int calls = 0, err;
	struct stat sb;

	opts.user = &calls;
	CHECK(nbpf_ctl_server_start(&opts, &srv) == 0);
	if (!srv)
		return;
	snprintf(path, sizeof(path), "%s", nbpf_ctl_server_path(srv));
	CHECK(stat(path, &sb) == 0 && S_ISSOCK(sb.st_mode) && (sb.st_mode & 0777) == 0600);

	/* A normal exchange. */
	err = nbpf_ctl_call_path(path, NBPF_CTL_RELOAD, "reload path=/a%20b at_call=5", &m, &em);
	CHECK_MSG(err == 0, "%d %s", err, em);
	CHECK(m.n_recs == 2);
	if (m.n_recs == 2) {
		CHECK(!strcmp(m.recs[1].kind, "echo"));
		CHECK_STR_CONTAINS(nbpf_ctl_rec_get(&m.recs[1], "path"), "/a b");
	}
	nbpf_ctl_msg_free(&m);

	/* Handler failures carry their message. */
	err = nbpf_ctl_call_path(path, NBPF_CTL_CALLS, NULL, &m, &em);
	CHECK(err == -EIO);
	CHECK_STR_CONTAINS(em, "on purpose");
	nbpf_ctl_msg_free(&m);

	/* Malformed payload, unknown type, unknown version, bad magic, oversized. */
	nbpf_ctl_hdr_encode(frame, NBPF_CTL_PS, 5);
	memcpy(frame + NBPF_CTL_HDR_SIZE, "x =y\n", 5);
	CHECK(raw_exchange(path, frame, NBPF_CTL_HDR_SIZE + 5, msg, sizeof(msg)) == -EBADMSG);
	nbpf_ctl_hdr_encode(frame, 999, 0);
	CHECK(raw_exchange(path, frame, NBPF_CTL_HDR_SIZE, msg, sizeof(msg)) == -EOPNOTSUPP);
	nbpf_ctl_hdr_encode(frame, NBPF_CTL_PS, 0);
	frame[4] = 2;
	CHECK(raw_exchange(path, frame, NBPF_CTL_HDR_SIZE, msg, sizeof(msg)) == -EPROTONOSUPPORT);
	CHECK_STR_CONTAINS(msg, "version");
	CHECK(raw_exchange(path, "GET / HTTP/1.0\r\n\r\n", 18, msg, sizeof(msg)) == -EPROTO);
	nbpf_ctl_hdr_encode(frame, NBPF_CTL_PS, NBPF_CTL_MAX_REQUEST + 1);
	CHECK(raw_exchange(path, frame, NBPF_CTL_HDR_SIZE, msg, sizeof(msg)) == -EMSGSIZE);
	{
		/* A request at the limit is still read and answered. */
		char *big = malloc(NBPF_CTL_MAX_REQUEST + 1);

		memset(big, 'a', NBPF_CTL_MAX_REQUEST);
		memcpy(big, "r k=", 4);
		big[NBPF_CTL_MAX_REQUEST] = 0;
		err = nbpf_ctl_call_path(path, NBPF_CTL_HELLO, big, &m, &em);
		CHECK_MSG(err == 0, "%d %s", err, em);
		nbpf_ctl_msg_free(&m);
		free(big);
	}

	/* A stuck client (half a header, then silence) cannot stall a second one. */
	{
		int stuck = connect_path(path);
		int64_t t0;

		CHECK(stuck >= 0);
		CHECK(send(stuck, frame, 6, MSG_NOSIGNAL) == 6);
		usleep(50 * 1000);
		t0 = now_ms();
		err = nbpf_ctl_call_path(path, NBPF_CTL_HELLO, "hi x=1", &m, &em);
		CHECK(err == 0);
		CHECK_MSG(now_ms() - t0 < 400, "second client waited %lld ms",
			  (long long)(now_ms() - t0));
		nbpf_ctl_msg_free(&m);
		/* ... and is dropped after its deadline. */
		char c;
		struct timeval tv = { .tv_sec = 5 };

		setsockopt(stuck, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		t0 = now_ms();
		CHECK(recv(stuck, &c, 1, 0) == 0);
		CHECK(now_ms() - t0 < 3000);
		close(stuck);
	}
	/* A client that sends a request and never reads a large answer is dropped too. */
	{
		int lazy = connect_path(path);

		nbpf_ctl_hdr_encode(frame, NBPF_CTL_HELLO, 0);
		CHECK(send(lazy, frame, NBPF_CTL_HDR_SIZE, MSG_NOSIGNAL) == NBPF_CTL_HDR_SIZE);
		err = nbpf_ctl_call_path(path, NBPF_CTL_HELLO, NULL, &m, &em);
		CHECK(err == 0);
		nbpf_ctl_msg_free(&m);
		close(lazy);
	}

	/* Another uid is refused, by the file mode and by SO_PEERCRED behind it. */
	if (geteuid() == 0) {
		for (int relax = 0; relax < 2; relax++) {
			pid_t pid;
			int status = -1;

			if (relax) {
				/* Simulate a misconfigured mode: only the credential check is left. */
				chmod(dir, 0755);
				chmod(path, 0777);
			}
			pid = fork();
			if (pid == 0) {
				struct nbpf_ctl_msg cm;
				const char *cem;
				int r;

				if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
					_exit(10);
				r = nbpf_ctl_call_path(path, NBPF_CTL_HELLO, NULL, &cm, &cem);
				/* 0: refused as expected for this mode; 20+: accepted or other failure. */
				if (!relax)
					_exit(r == -EACCES ? 0 : 20);
				_exit(r == -EPERM && strstr(cem, "permission denied") ? 0 : 21);
			}
			CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
			CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "relax=%d status %d",
				  relax, status);
		}
		chmod(dir, 0700);
		chmod(path, 0600);
		nbpf_ctl_server_stats(srv, &st);
		CHECK(st.refused_cred == 1);
	} else {
		printf("not root: skipping the other-uid checks\n");
	}

	/* Random frames and garbage over real connections: answered or dropped, never fatal. */
	{
		uint64_t x = 0x1234567887654321ull;
		uint8_t buf[512];
		double scale = getenv("NCCLBPF_TEST_SCALE") ? atof(getenv("NCCLBPF_TEST_SCALE")) : 1;
		int rounds = (int)(300 * (scale > 0 ? scale : 1)) + 20;

		for (int r = 0; r < rounds; r++) {
			size_t len = 1 + (size_t)(x % sizeof(buf));

			for (size_t k = 0; k < len; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				buf[k] = (uint8_t)x;
			}
			if (r & 1) /* a valid header in front of random records */
				nbpf_ctl_hdr_encode(buf, (uint16_t)(1 + r % NBPF_CTL_TYPE_MAX),
						    (uint32_t)(len - NBPF_CTL_HDR_SIZE > 0 && len > NBPF_CTL_HDR_SIZE
								       ? len - NBPF_CTL_HDR_SIZE : 0));
			int fd = connect_path(path);

			if (fd < 0)
				continue;
			(void)!send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
		}
	}

	/* Everything above left the server serving. */
	err = nbpf_ctl_call_path(path, NBPF_CTL_HELLO, NULL, &m, &em);
	CHECK(err == 0);
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_server_stats(srv, &st);
	CHECK(st.bad_frames >= 5);
	CHECK(st.timed_out >= 1);
	nbpf_ctl_server_stop(srv);
	CHECK(access(path, F_OK) != 0);
	CHECK(calls >= 5);
}

static int count_dir(const char *dir, void *arg)
{
	(void)dir;
	(*(int *)arg)++;
	return 0;
}

/*
 * A default directory (here $XDG_RUNTIME_DIR/ncclbpf) made first by another
 * uid is not used, and does not disable us: a private sibling of ours is,
 * the same one every time, and the listing finds it.
 */
static void test_default_taken(const char *base)
{
	char xdg[512], taken[600], out[600], again[600];
	struct stat st;
	int n = 0;

	snprintf(xdg, sizeof(xdg), "%s/xdg", base);
	snprintf(taken, sizeof(taken), "%s/ncclbpf", xdg);
	CHECK(mkdir(xdg, 0700) == 0);
	CHECK(mkdir(taken, 0700) == 0 && chown(taken, 65534, 65534) == 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	unsetenv("NCCLBPF_CTL_DIR");
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == 0);
	CHECK(!strncmp(out, taken, strlen(taken)) && out[strlen(taken)] == '.' &&
	      strlen(out) == strlen(taken) + 7);
	CHECK(lstat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	      (st.st_mode & 07777) == 0700);
	CHECK(lstat(taken, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 07777) == 0700);
	CHECK(nbpf_ctl_runtime_dir(again, sizeof(again), true) == 0 && !strcmp(again, out));
	CHECK(nbpf_ctl_runtime_dir(again, sizeof(again), false) == 0 && !strcmp(again, out));
	CHECK(nbpf_ctl_runtime_dir_foreach(count_dir, &n) == 0 && n == 1);
	/* Another user's sibling is never picked. */
	snprintf(again, sizeof(again), "%s.AAAAAA", taken);
	CHECK(mkdir(again, 0700) == 0 && chown(again, 65534, 65534) == 0);
	n = 0;
	CHECK(nbpf_ctl_runtime_dir_foreach(count_dir, &n) == 0 && n == 1);
	CHECK(nbpf_ctl_runtime_dir(again, sizeof(again), true) == 0 && !strcmp(again, out));
	snprintf(again, sizeof(again), "%s.AAAAAA", taken);
	rmdir(again);
	rmdir(out);
	rmdir(taken);
	rmdir(xdg);
	unsetenv("XDG_RUNTIME_DIR");
}

static void test_runtime_dir(const char *base)
{
	char d[512], out[512];

	snprintf(d, sizeof(d), "%s/rt", base);
	setenv("NCCLBPF_CTL_DIR", d, 1);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), false) == -ENOENT);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == 0);
	struct stat st;
	CHECK(stat(d, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* A directory the operator named is never chmod'ed: ours and read-only for others is fine, */
	chmod(d, 0755);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == 0);
	CHECK(stat(d, &st) == 0 && (st.st_mode & 07777) == 0755);
	/* writable by others without the sticky bit is refused and left as it is, */
	chmod(d, 0777);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == -EPERM);
	CHECK_STR_CONTAINS(ncclbpf_errmsg(), "sticky");
	CHECK(stat(d, &st) == 0 && (st.st_mode & 07777) == 0777);
	/* and a sticky shared one (like /tmp) is used and keeps its mode. */
	chmod(d, 01777);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == 0 && !strcmp(out, d));
	CHECK(stat(d, &st) == 0 && (st.st_mode & 07777) == 01777);
	/* A symlink in place of the directory is refused, not followed. */
	snprintf(d, sizeof(d), "%s/link", base);
	CHECK(symlink("/tmp", d) == 0);
	setenv("NCCLBPF_CTL_DIR", d, 1);
	CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == -ENOTDIR);
	unlink(d);
	if (geteuid() == 0) {
		snprintf(d, sizeof(d), "%s/other", base);
		CHECK(mkdir(d, 0700) == 0 && chown(d, 65534, 65534) == 0);
		setenv("NCCLBPF_CTL_DIR", d, 1);
		CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == -EPERM);
		/* Sticky but another user's: that user could remove our sockets. */
		CHECK(chmod(d, 01777) == 0);
		CHECK(nbpf_ctl_runtime_dir(out, sizeof(out), true) == -EPERM);
		rmdir(d);
		test_default_taken(base);
	} else {
		printf("control_proto: SKIP default directory taken by another uid (needs root)\n");
	}
	snprintf(d, sizeof(d), "%s/rt", base);
	rmdir(d);
	unsetenv("NCCLBPF_CTL_DIR");
}

int main(void)
{
	char base[] = "/tmp/ncclbpf-ctltest-XXXXXX";

	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(base) != NULL);
	chmod(base, 0700);
	test_frames();
	test_records();
	test_runtime_dir(base);
	test_server(base);
	rmdir(base);
	return check_summary("control_proto");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_names.c - names and directories in shared places, end to end through
 * the plugin (loaded by the NCCL emulator) and the ncclbpf command:
 *
 *  - two jobs that are both pid 1 of their own pid namespace, sharing the
 *    map and control directories, both run their policy, keep their own
 *    socket, and the command lists and reaches each by the pid it sees;
 *  - default directories another uid made first do not disable a victim;
 *  - NCCLBPF_CTL_DIR naming a sticky shared directory keeps its mode;
 *  - a control-directory problem WARNs once;
 *  - export --textfile rides out ENOSPC on a tiny tmpfs.
 *
 * Every case runs in a forked child, so each loads the plugin afresh.
 * Cases that need root (namespaces, other uids, mounts) say they skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "emu_test.h"

#define SKIP 77

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1, .nvls = true };

/* A forked case counts its own checks and exits with their verdict. */
static void child_begin(void)
{
	check_passed = check_failed = 0;
	emu_log_reset();
}

/* The plugin's log so far and its WARN count, read under the logger's lock (its threads log too). */
static char log_copy[sizeof(emu_log_buf)];

static int log_snapshot(void)
{
	int warns;

	pthread_mutex_lock(&emu_log_lock);
	memcpy(log_copy, emu_log_buf, sizeof(log_copy));
	warns = emu_log_warns;
	pthread_mutex_unlock(&emu_log_lock);
	return warns;
}

/* Runs the ncclbpf command; returns its exit status, stdout in out. */
static int cli(char *out, size_t outlen, const char *args)
{
	char cmd[4096];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s", CTL_CLI, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	out[0] = 0;
	while (n + 1 < outlen) {
		size_t k = fread(out + n, 1, outlen - 1 - n, p);

		if (!k)
			break;
		n += k;
	}
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Loads the plugin with policy ctl_a and makes one decision: 1 if the policy decided it. */
static int job_start(struct emu_plugin *pl, struct emu_tuner *t)
{
	struct emu_decision d;
	char err[512];

	emu_set_policy(emu_policy("ctl_a"));
	if (emu_open(pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err))) {
		fprintf(stderr, "emu_open: %s\n", err);
		return -1;
	}
	if (emu_tuner_init(t, pl, 0xabc, &topo8, emu_logger) ||
	    emu_tuner_call(t, &topo8, 4, 1ull << 28, &d))
		return -1;
	if (getenv("EMU_VERBOSE"))
		fprintf(stderr, "decision %d/%d nccl %d/%d\n", d.algo, d.proto, d.nccl_algo, d.nccl_proto);
	/* ctl_a picks RING/LL; NCCL's own pick for this call is something else. */
	return d.algo == 1 && d.proto == 0 && (d.nccl_algo != 1 || d.nccl_proto != 0) &&
	       (log_snapshot(), !strstr(log_copy, "policy not loaded"));
}

static void job_stop(struct emu_plugin *pl, struct emu_tuner *t)
{
	emu_tuner_fini(t);
	emu_close(pl);
}

/* Sockets in dir that someone listens on. */
static int live_sockets(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		if (!strstr(de->d_name, ".sock") ||
		    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, de->d_name) >=
			    (int)sizeof(sa.sun_path))
			continue;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			n++;
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return n;
}

static int count_files(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Waits for a child; its exit status, SKIP, or -1. */
static int wait_child(pid_t pid)
{
	int st = 0;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- two jobs, each pid 1 of its own pid namespace ------------------------ */

struct ns_report {
	int kind;    /* 1: pid as the test sees it, from the middle process; 2: the job's result */
	int pid;     /* kind 1: host pid; kind 2: getpid() inside the namespace */
	int applied; /* kind 2: the policy decided */
	int errno_;  /* unshare's errno, when it failed */
};

static void ns_job(int up, int down)
{
	struct ns_report r = { .kind = 2 };
	struct emu_plugin pl;
	struct emu_tuner t;
	char b;

	r.pid = getpid();
	r.applied = job_start(&pl, &t);
	(void)!write(up, &r, sizeof(r));
	/* Both jobs run until the test has looked at them. */
	while (read(down, &b, 1) < 0 && errno == EINTR)
		;
	job_stop(&pl, &t);
	_exit(0);
}

static pid_t ns_spawn(int up[2], int down[2])
{
	pid_t pid = fork();

	if (pid)
		return pid;
	close(up[0]);
	close(down[1]);
	if (unshare(CLONE_NEWPID)) {
		struct ns_report r = { .kind = 1, .errno_ = errno };

		(void)!write(up[1], &r, sizeof(r));
		_exit(SKIP);
	}
	pid = fork();
	if (pid == 0)
		ns_job(up[1], down[0]);
	{
		struct ns_report r = { .kind = 1, .pid = pid };

		(void)!write(up[1], &r, sizeof(r));
	}
	_exit(wait_child(pid));
}

static void test_pid_namespaces(const char *base)
{
	char ctl[512], maps[512], out[1 << 16], args[256], want[64];
	int up[2], down[2], host[2] = { 0, 0 }, n_host = 0, n_jobs = 0, applied = 0, ones = 0;
	pid_t mid[2];

	if (geteuid()) {
		printf("control_names: SKIP same pid in two pid namespaces (needs root)\n");
		return;
	}
	snprintf(ctl, sizeof(ctl), "%s/ns-ctl", base);
	snprintf(maps, sizeof(maps), "%s/ns-maps", base);
	CHECK(mkdir(ctl, 0700) == 0 && mkdir(maps, 0700) == 0);
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	setenv("NCCLBPF_MAP_DIR", maps, 1);
	CHECK(pipe(up) == 0 && pipe(down) == 0);
	for (int i = 0; i < 2; i++)
		mid[i] = ns_spawn(up, down);
	close(up[1]);
	close(down[0]);
	for (int i = 0; i < 4; i++) {
		struct ns_report r;

		if (read(up[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
			break;
		if (r.kind == 1 && r.errno_) {
			printf("control_names: SKIP same pid in two pid namespaces (unshare: %s)\n",
			       strerror(r.errno_));
			close(down[1]);
			wait_child(mid[0]);
			wait_child(mid[1]);
			goto out;
		}
		if (r.kind == 1 && n_host < 2)
			host[n_host++] = r.pid;
		if (r.kind == 2) {
			n_jobs++;
			ones += r.pid == 1;
			applied += r.applied == 1;
		}
	}
	CHECK(n_host == 2 && n_jobs == 2);
	CHECK_MSG(ones == 2, "both jobs must be pid 1 in their namespace (%d were)", ones);
	/* Both run their policy: neither failed open because the other took its map names. */
	CHECK_MSG(applied == 2, "%d of 2 jobs run their policy", applied);
	/* Each keeps its own socket, and two maps each. */
	CHECK_EQ_U64(live_sockets(ctl), 2);
	CHECK_EQ_U64(count_files(maps), 4);
	/* The command lists both by the pid it sees, and reaches each one. */
	CHECK(cli(out, sizeof(out), "-j ps") == 0);
	for (int i = 0; i < 2; i++) {
		snprintf(want, sizeof(want), "\"pid\":%d,\"ns_pid\":1,", host[i]);
		CHECK_STR_CONTAINS(out, want);
		snprintf(args, sizeof(args), "map list %d", host[i]);
		CHECK(cli(out + 32768, sizeof(out) - 32768, args) == 0);
		CHECK_STR_CONTAINS(out + 32768, "ctl_runs");
		CHECK_STR_CONTAINS(out + 32768, maps);
	}
	CHECK(cli(out, sizeof(out), "ps") == 0);
	CHECK_STR_CONTAINS(out, "(pid 1 in its pid namespace)");
	CHECK(cli(out, sizeof(out), "export") == 0);
	CHECK_STR_CONTAINS(out, "ncclbpf_processes 2");
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "reload %d %s", host[i], emu_policy("ctl_b"));
		CHECK_MSG(cli(out, sizeof(out), args) == 0, "reload of pid %d", host[i]);
		snprintf(want, sizeof(want), "pid %d: loaded", host[i]);
		CHECK_STR_CONTAINS(out, want);
	}
	close(down[1]);
	CHECK(wait_child(mid[0]) == 0 && wait_child(mid[1]) == 0);
	/* Each removed what it made, and only that. */
	CHECK_EQ_U64(count_files(ctl), 0);
	CHECK_EQ_U64(count_files(maps), 0);
out:
	close(up[0]);
	rmdir(ctl);
	rmdir(maps);
	unsetenv("NCCLBPF_CTL_DIR");
	unsetenv("NCCLBPF_MAP_DIR");
}

/* ---- default directories taken by another uid ----------------------------- */

static void rm_tree(const char *pattern)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", pattern);
	(void)!system(cmd);
}

static void test_squatted_defaults(void)
{
	char tmp_d[64], shm_d[64], out[1 << 14], want[320];
	uid_t v = 54321;
	pid_t pid;

	if (geteuid()) {
		printf("control_names: SKIP default directories taken by another uid (needs root)\n");
		return;
	}
	/*
	 * A uid nobody uses whose default names are free, so nothing real is
	 * touched.  mkdir claims it: another suite running this case at the
	 * same time probes the same uids, and two victims of one uid would
	 * share the replacement directory that each removes at its end.
	 */
	for (;; v++) {
		snprintf(tmp_d, sizeof(tmp_d), "/tmp/ncclbpf-%u", (unsigned)v);
		snprintf(shm_d, sizeof(shm_d), "/dev/shm/ncclbpf-%u", (unsigned)v);
		if (getpwuid(v) || !access(shm_d, F_OK) || mkdir(tmp_d, 0700))
			continue;
		if (!mkdir(shm_d, 0700))
			break;
		rmdir(tmp_d);
	}
	/* The attacker (nobody) makes the victim's predictable directories first. */
	CHECK(chown(tmp_d, 65534, 65534) == 0 && chown(shm_d, 65534, 65534) == 0);
	pid = fork();
	if (pid == 0) {
		struct emu_plugin pl;
		struct emu_tuner t;
		int ok, warns;

		child_begin();
		unsetenv("XDG_RUNTIME_DIR");
		unsetenv("NCCLBPF_CTL_DIR");
		unsetenv("NCCLBPF_MAP_DIR");
		if (setgroups(0, NULL) || setgid(v) || setuid(v))
			_exit(2);
		ok = job_start(&pl, &t);
		warns = log_snapshot();
		CHECK_MSG(ok == 1, "the victim's policy must run (log:\n%s)", log_copy);
		/* One WARN per directory, naming the squatter and the replacement. */
		CHECK_EQ_U64(warns, 2);
		CHECK_STR_CONTAINS(log_copy, "owned by uid 65534");
		snprintf(want, sizeof(want), "using %s.", tmp_d);
		CHECK_STR_CONTAINS(log_copy, want);
		snprintf(want, sizeof(want), "using %s.", shm_d);
		CHECK_STR_CONTAINS(log_copy, want);
		CHECK(!strstr(log_copy, "control socket disabled"));
		/* The victim's command finds the job in the replacement directory. */
		CHECK(cli(out, sizeof(out), "-j ps") == 0);
		snprintf(want, sizeof(want), "\"pid\":%d,", (int)getpid());
		CHECK_STR_CONTAINS(out, want);
		job_stop(&pl, &t);
		_exit(check_failed ? 1 : 0);
	}
	CHECK_MSG(wait_child(pid) == 0, "victim uid %u was disabled by directories of uid 65534",
		  (unsigned)v);
	/* The claimed names last, so no other run takes this uid while ours remain. */
	snprintf(want, sizeof(want), "%s.* %s.* %s %s", tmp_d, shm_d, tmp_d, shm_d);
	rm_tree(want);
}

/* ---- NCCLBPF_CTL_DIR: a sticky shared directory, a bad one ---------------- */

static void test_sticky_ctl_dir(const char *base)
{
	char d[512], out[1 << 14], want[64];
	pid_t pid;

	snprintf(d, sizeof(d), "%s/sticky", base);
	CHECK(mkdir(d, 0700) == 0 && chmod(d, 01777) == 0);
	pid = fork();
	if (pid == 0) {
		struct emu_plugin pl;
		struct emu_tuner t;
		struct stat st;

		child_begin();
		setenv("NCCLBPF_CTL_DIR", d, 1);
		CHECK(job_start(&pl, &t) == 1);
		CHECK(stat(d, &st) == 0 && (st.st_mode & 07777) == 01777);
		CHECK_EQ_U64(live_sockets(d), 1);
		CHECK(cli(out, sizeof(out), "-j ps") == 0);
		snprintf(want, sizeof(want), "\"pid\":%d,", (int)getpid());
		CHECK_STR_CONTAINS(out, want);
		job_stop(&pl, &t);
		_exit(check_failed ? 1 : 0);
	}
	CHECK(wait_child(pid) == 0);
	{
		struct stat st;

		CHECK_MSG(stat(d, &st) == 0 && (st.st_mode & 07777) == 01777,
			  "NCCLBPF_CTL_DIR changed mode to %04o", (unsigned)(st.st_mode & 07777));
	}
	CHECK_EQ_U64(count_files(d), 0);
	rmdir(d);
}

/* One problem, one WARN, and a directory we did not make keeps its mode. */
static void test_warn_once(const char *base)
{
	char loose[512], link[512];
	const char *dirs[2] = { loose, link };

	snprintf(loose, sizeof(loose), "%s/loose", base);
	snprintf(link, sizeof(link), "%s/link", base);
	CHECK(mkdir(loose, 0700) == 0 && chmod(loose, 0777) == 0);
	CHECK(symlink(base, link) == 0);
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct emu_plugin pl;
			struct emu_tuner t;
			struct stat st;
			int warns;

			child_begin();
			setenv("NCCLBPF_CTL_DIR", dirs[i], 1);
			/* The policy runs without its control socket. */
			CHECK(job_start(&pl, &t) == 1);
			warns = log_snapshot();
			CHECK_MSG(warns == 1, "%d WARNs:\n%s", warns, log_copy);
			CHECK_STR_CONTAINS(log_copy, dirs[i]);
			CHECK_STR_CONTAINS(log_copy, "control socket disabled");
			CHECK(lstat(loose, &st) == 0 && (st.st_mode & 07777) == 0777);
			job_stop(&pl, &t);
			_exit(check_failed ? 1 : 0);
		}
		CHECK_MSG(wait_child(pid) == 0, "NCCLBPF_CTL_DIR=%s", dirs[i]);
	}
	unlink(link);
	rmdir(loose);
}

/* ---- export --textfile through ENOSPC ------------------------------------- */

/* The whole file, however the kernel splits the reads. */
static ssize_t read_all(int fd, char *buf, size_t max)
{
	size_t n = 0;
	ssize_t k;

	while (n < max && (k = read(fd, buf + n, max - n)) > 0)
		n += (size_t)k;
	return (ssize_t)n;
}

/* Waits up to secs seconds for needle in the file; true once it is there. */
static bool file_says(const char *path, const char *needle, int secs)
{
	static char text[1 << 16];

	for (int i = 0; i < secs * 20; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t k = fd >= 0 ? read_all(fd, text, sizeof(text) - 1) : -1;

		if (fd >= 0)
			close(fd);
		text[k > 0 ? k : 0] = 0;
		if (strstr(text, needle))
			return true;
		usleep(50 * 1000);
	}
	return false;
}

static void test_export_enospc(const char *base)
{
	char mnt[512], errf[512], prom[600], ctl[512];
	pid_t pid;
	int rc;

	if (geteuid()) {
		printf("control_names: SKIP export through ENOSPC (needs root to mount a tmpfs)\n");
		return;
	}
	snprintf(mnt, sizeof(mnt), "%s/tiny", base);
	snprintf(errf, sizeof(errf), "%s/export.err", base);
	snprintf(prom, sizeof(prom), "%s/ncclbpf.prom", mnt);
	snprintf(ctl, sizeof(ctl), "%s/export-ctl", base);
	CHECK(mkdir(mnt, 0700) == 0 && mkdir(ctl, 0700) == 0);
	/*
	 * The exporter's own control directory: the default one is shared with
	 * every job of this uid on the machine, and one of them stopped
	 * (SIGSTOP) held each collection for the client's whole timeout, so
	 * the first write came after the disk had room again.
	 */
	setenv("NCCLBPF_CTL_DIR", ctl, 1);
	pid = fork();
	if (pid == 0) {
		static char text[1 << 20];
		char filler[600], buf[4096] = { 0 };
		int fd, n_err = 0;
		pid_t ex;
		ssize_t k;

		child_begin();
		/*
		 * A private mount namespace, so the tmpfs is ours alone.  Room for
		 * the old file and its replacement at once, as a rewrite needs.
		 */
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700"))
			_exit(SKIP);
		snprintf(filler, sizeof(filler), "%s/filler", mnt);
		fd = open(filler, O_CREAT | O_WRONLY, 0600);
		while (fd >= 0 && write(fd, buf, sizeof(buf)) > 0)
			;
		CHECK(errno == ENOSPC);
		close(fd);
		ex = fork();
		if (ex == 0) {
			int e = open(errf, O_CREAT | O_TRUNC | O_WRONLY, 0600);

			dup2(e, 2);
			execl(CTL_CLI, CTL_CLI, "export", "--textfile", prom, "--interval", "0.2",
			      (char *)NULL);
			_exit(127);
		}
		/*
		 * Events, not sleeps: a slow start (a loaded machine, ASan) must not
		 * let the first write come after the disk has room again.
		 */
		CHECK_MSG(file_says(errf, "No space left", 60), "no write failed on the full disk");
		CHECK(access(prom, F_OK) != 0);
		unlink(filler);
		CHECK_MSG(file_says(errf, "written again", 60), "no write after the disk had room");
		kill(ex, SIGTERM);
		CHECK_MSG(wait_child(ex) == 0, "the exporter gave up");
		fd = open(prom, O_RDONLY);
		k = fd >= 0 ? read_all(fd, text, sizeof(text) - 1) : -1;
		text[k > 0 ? k : 0] = 0;
		if (fd >= 0)
			close(fd);
		CHECK_STR_CONTAINS(text, "ncclbpf_processes");
		CHECK(k > 0 && text[k - 1] == '\n');
		/* Only the target: no temporary file left behind by the failed writes. */
		CHECK_EQ_U64(count_files(mnt), 1);
		fd = open(errf, O_RDONLY);
		k = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
		text[k > 0 ? k : 0] = 0;
		if (fd >= 0)
			close(fd);
		for (const char *p = text; (p = strstr(p, "No space left")); p++)
			n_err++;
		CHECK_MSG(n_err == 1, "one message per episode, got %d:\n%s", n_err, text);
		CHECK_STR_CONTAINS(text, "written again");
		umount(mnt);
		_exit(check_failed ? 1 : 0);
	}
	rc = wait_child(pid);
	if (rc == SKIP)
		printf("control_names: SKIP export through ENOSPC (cannot mount a tmpfs here)\n");
	else
		CHECK(rc == 0);
	unlink(errf);
	rmdir(mnt);
	rmdir(ctl);
	unsetenv("NCCLBPF_CTL_DIR");
}

int main(void)
{
	char base[] = "/tmp/ncclbpf-names-XXXXXX";

	CHECK(mkdtemp(base) != NULL);
	/* Other users (the victim uid) must reach the plugin, policies and command. */
	chmod(base, 0755);
	test_pid_namespaces(base);
	test_squatted_defaults();
	test_sticky_ctl_dir(base);
	test_warn_once(base);
	test_export_enospc(base);
	CHECK(rmdir(base) == 0);
	return check_summary("control_names");
}

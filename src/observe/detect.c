// SPDX-License-Identifier: Apache-2.0
/*
 * detect.c - what the running kernel and this process offer: privileges,
 * tracefs, tracepoints (BTF or tracefs), fentry, the CUDA driver library,
 * NVIDIA device majors, the NUMA layout and cgroup v2 ids.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "observe_int.h"
#include "runtime/error.h"

bool obs_has_caps(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	/* CAP_SYS_ADMIN (21) alone, or CAP_BPF (39) with CAP_PERFMON (38). */
	return (eff >> 21 & 1) || ((eff >> 39 & 1) && (eff >> 38 & 1));
}

const char *obs_tracefs_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[128];

	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events", dirs[i]);
		/* Effective credentials: with CAP_DAC_READ_SEARCH and no root, access() says no. */
		if (!faccessat(AT_FDCWD, p, F_OK, AT_EACCESS))
			return dirs[i];
	}
	/* Not mounted: mount it where libbpf looks first (needs CAP_SYS_ADMIN). */
	if (!mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

/*
 * The name sp's tracepoint has after NCCLBPF_OBSERVE_TP_RENAME ("old=new,...").
 * An entry "btf:old=new" renames only the typed raw tracepoint, so the
 * classic fallback can be exercised on a kernel that has both.
 */
const char *obs_tp_name(const struct nbpf_obs *obs, const struct prog_spec *sp, char *buf, size_t n)
{
	const char *r = obs->o.tp_rename, *tp = sp->tp;
	size_t len = strlen(tp);

	while (r && *r) {
		const char *end = strchr(r, ','), *eq, *k = r;

		if (!end)
			end = r + strlen(r);
		if (!strncmp(k, "btf:", 4)) {
			k += 4;
			if (sp->kind != TP_BTF)
				k = end;
		}
		eq = strchr(k, '=');
		if (eq && eq < end && (size_t)(eq - k) == len && !strncmp(k, tp, len)) {
			snprintf(buf, n, "%.*s", (int)(end - eq - 1), eq + 1);
			return buf;
		}
		r = *end ? end + 1 : end;
	}
	return tp;
}

bool obs_tp_present(const struct nbpf_obs *obs, const struct prog_spec *sp, const char *name)
{
	char path[512], tn[160];
	const char *dir;

	if (sp->kind == TP_BTF) {
		snprintf(tn, sizeof(tn), "btf_trace_%s", name);
		return btf__find_by_name_kind(obs->btf, tn, BTF_KIND_TYPEDEF) > 0;
	}
	dir = obs_tracefs_dir();
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s", dir, sp->cat, name);
	return !faccessat(AT_FDCWD, path, F_OK, AT_EACCESS);
}

/* Whether the kernel's BTF has struct sname with a member mname. */
static bool btf_has_member(const struct btf *btf, const char *sname, const char *mname)
{
	int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, btf_members(t)[i].name_off), mname))
			return true;
	return false;
}

/*
 * Does some block device keep no iostats?  The block layer stamps only the
 * requests of devices that do (request.start_time_ns); for the others the
 * submit program must read a clock of its own.  Unreadable counts as yes.
 */
bool obs_blk_unstamped(void)
{
	DIR *d = opendir("/sys/block");
	bool unstamped = !d;
	struct dirent *de;

	while (d && !unstamped && (de = readdir(d))) {
		char path[320], v[8] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/queue/iostats", de->d_name);
		f = fopen(path, "r");
		unstamped = !f || !fgets(v, sizeof(v), f) || v[0] == '0';
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return unstamped;
}

/*
 * Does the scheduler account each task's runs (CONFIG_SCHED_INFO) where a
 * program can read them and the clock they are in?  task_struct must
 * carry sched_info (its last_queued, last_arrival, pcount and run_delay
 * came together), a fair queue must point at its run queue
 * (CONFIG_FAIR_GROUP_SCHED; the run queues themselves are per-CPU data,
 * which kernels without KALLSYMS_ALL do not let a program name), and the
 * accounting must be live: this process has been counted on a CPU
 * (/proc/self/schedstat's third field), which kernels before 5.14 do only
 * with schedstats or delay accounting on.  A rename of "sched_info"
 * (tests) switches it off.
 */
bool obs_sched_info(const struct nbpf_obs *obs)
{
	static const struct prog_spec si = { "sched_info", TP_BTF, NULL, "sched_info", "", "", false };
	unsigned long long run = 0, delay = 0, pcount = 0;
	char nb[64];
	FILE *f;

	if (!btf_has_member(obs->btf, obs_tp_name(obs, &si, nb, sizeof(nb)), "last_arrival") ||
	    !btf_has_member(obs->btf, "cfs_rq", "rq") || !btf_has_member(obs->btf, "rq", "clock"))
		return false;
	f = fopen("/proc/self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu %llu", &run, &delay, &pcount) != 3)
			pcount = 0;
		fclose(f);
	}
	return pcount > 0;
}

bool obs_find_libcuda(struct nbpf_obs *obs)
{
	static const char *const paths[] = {
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1",
		"/usr/lib/wsl/lib/libcuda.so.1",
	};

	if (obs->o.libcuda) {
		snprintf(obs->libcuda, sizeof(obs->libcuda), "%s", obs->o.libcuda);
		return !faccessat(AT_FDCWD, obs->libcuda, R_OK, AT_EACCESS);
	}
	/* The library the job itself mapped wins: it may live outside the usual places. */
	for (int i = 0; i < obs->o.n_pids; i++) {
		char maps[64], line[4608];
		FILE *f;

		snprintf(maps, sizeof(maps), "/proc/%d/maps", obs->o.pids[i]);
		f = fopen(maps, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *p = strchr(line, '/');

			if (p && strstr(p, "/libcuda.so")) {
				p[strcspn(p, "\n")] = 0;
				snprintf(obs->libcuda, sizeof(obs->libcuda), "%s", p);
				fclose(f);
				return true;
			}
		}
		if (f)
			fclose(f);
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!faccessat(AT_FDCWD, paths[i], R_OK, AT_EACCESS)) {
			snprintf(obs->libcuda, sizeof(obs->libcuda), "%s", paths[i]);
			return true;
		}
	return false;
}

/* Character-device majors of the NVIDIA driver (195 and the dynamic ones, from /proc/devices). */
int obs_gpu_majors(struct nbpf_obs *obs)
{
	const char *s = obs->o.gpu_majors;
	char line[128];
	int n = 0;
	FILE *f;

	if (s) {
		while (*s && n < OBS_MAX_DEV_MAJORS) {
			char *end;
			unsigned long v = strtoul(s, &end, 10);

			if (end == s)
				return nbpf_err(-EINVAL, "GPU device majors: bad list '%s'", obs->o.gpu_majors);
			if (v)
				obs->cfg.gpu_majors[n++] = (__u32)v;
			s = *end == ',' ? end + 1 : end;
		}
		return n;
	}
	f = fopen("/proc/devices", "r");
	while (f && fgets(line, sizeof(line), f) && n < OBS_MAX_DEV_MAJORS) {
		unsigned v;
		char name[64];

		if (!strncmp(line, "Block", 5))
			break;
		if (sscanf(line, "%u %63s", &v, name) == 2 && !strncmp(name, "nvidia", 6))
			obs->cfg.gpu_majors[n++] = v;
	}
	if (f)
		fclose(f);
	return n;
}

/*
 * Can this kernel attach fentry/fexit programs?  Kernels may have BTF and
 * still refuse trampolines (no DYNAMIC_FTRACE_WITH_DIRECT_CALLS, lockdown,
 * an LSM), so the only reliable test is to attach one: an empty program on
 * func, loaded and linked and closed again at once.
 */
bool obs_fentry_works(struct nbpf_obs *obs, const char *func)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 }, /* r0 = 0 */
		{ .code = 0x95 },                         /* exit */
	};
	int id = btf__find_by_name_kind(obs->btf, func, BTF_KIND_FUNC), pfd, lfd;
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_FENTRY);

	if (obs->fentry_probed)
		return obs->fentry_ok;
	obs->fentry_probed = true;
	if (id <= 0)
		return false;
	po.attach_btf_id = (__u32)id;
	pfd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "obs_fentry_probe", "GPL", (void *)insns, 2, &po);
	if (pfd < 0)
		return false;
	lfd = bpf_link_create(pfd, 0, BPF_TRACE_FENTRY, NULL);
	obs->fentry_ok = lfd >= 0;
	if (lfd >= 0)
		close(lfd);
	close(pfd);
	return obs->fentry_ok;
}

int obs_fill_numa(struct nbpf_obs *obs, struct obs_set *s)
{
	struct bpf_map *m = bpf_object__find_map_by_name(s->obj, "cpu_node");
	int fd = m ? bpf_map__fd(m) : -1;

	if (fd < 0)
		return 0;
	if (obs->o.numa) {
		const char *p = obs->o.numa;

		for (__u32 cpu = 0; *p && cpu < OBS_MAX_CPUS; cpu++) {
			char *end;
			__u32 node = (__u32)strtoul(p, &end, 10);

			if (end == p)
				return nbpf_err(-EINVAL, "NUMA table: bad list '%s'", obs->o.numa);
			bpf_map_update_elem(fd, &cpu, &node, BPF_ANY);
			p = *end == ',' ? end + 1 : end;
		}
		return 0;
	}
	for (__u32 cpu = 0; cpu < OBS_MAX_CPUS; cpu++) {
		char dir[96];
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "/sys/devices/system/cpu/cpu%u", cpu);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "node", 4) && isdigit((unsigned char)de->d_name[4])) {
				__u32 node = (__u32)atoi(de->d_name + 4);

				bpf_map_update_elem(fd, &cpu, &node, BPF_ANY);
				break;
			}
		closedir(d);
	}
	return 0;
}

int nbpf_obs_numa_table(struct nbpf_obs *obs, int *node, int n)
{
	struct bpf_object *obj = obs ? obs->sets[NBPF_OBS_SCHED].obj : NULL;
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, "cpu_node") : NULL;
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int fd = m ? bpf_map__fd(m) : -1;

	if (fd < 0)
		return nbpf_err(-ENOENT, "the sched probe set is not loaded");
	if (conf > 0 && conf < n)
		n = (int)conf;
	if (n > OBS_MAX_CPUS)
		n = OBS_MAX_CPUS;
	for (__u32 cpu = 0; cpu < (__u32)n; cpu++) {
		__u32 v = 0;

		bpf_map_lookup_elem(fd, &cpu, &v);
		node[cpu] = (int)v;
	}
	return n;
}

/*
 * The v2 cgroup id is the directory's inode number; its level is its depth
 * below the cgroup2 mount (wherever that is: /sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid systems), found by walking up while the
 * parent is on the same file system.
 */
int obs_cgroup_target(struct nbpf_obs *obs)
{
	const char *p = obs->o.cgroup;
	struct statfs fs;
	struct stat sb, up;
	char real[4096];
	int level = 0;

	if (!p || stat(p, &sb) || !S_ISDIR(sb.st_mode))
		return nbpf_err(-ENOENT, "cgroup %s: not a directory", p ? p : "(none)");
	if (statfs(p, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC)
		return nbpf_err(-EINVAL, "cgroup %s: not a cgroup v2 directory", p);
	if (!realpath(p, real))
		return nbpf_err(-errno, "cgroup %s: %s", p, strerror(errno));
	for (char *slash = strrchr(real, '/'); slash && slash != real; slash = strrchr(real, '/')) {
		*slash = 0;
		if (stat(real, &up) || up.st_dev != sb.st_dev)
			break;
		level++;
	}
	obs->cfg.cg_id = sb.st_ino;
	obs->cfg.cg_level = (obs_u32)level;
	return 0;
}


/*
 * The function prototype of typed tracepoint name: typedef -> pointer ->
 * prototype (void *ctx, args...); NULL if there is none.
 */
static const struct btf_type *tp_proto(const struct nbpf_obs *obs, const char *name)
{
	char tn[160];
	const struct btf_type *t;
	int id;

	snprintf(tn, sizeof(tn), "btf_trace_%s", name);
	id = btf__find_by_name_kind(obs->btf, tn, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return NULL;
	t = btf__type_by_id(obs->btf, btf__type_by_id(obs->btf, (__u32)id)->type);
	if (!t || !btf_is_ptr(t))
		return NULL;
	t = btf__type_by_id(obs->btf, t->type);
	return t && btf_is_func_proto(t) ? t : NULL;
}

bool obs_tp_arg_is_void_ptr(const struct nbpf_obs *obs, const char *name, int arg)
{
	const struct btf_type *p = tp_proto(obs, name), *t;

	if (!p || arg < 0 || arg + 1 >= btf_vlen(p))
		return false;
	t = btf__type_by_id(obs->btf, btf_params(p)[arg + 1].type);
	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(obs->btf, t->type);
	return t && btf_is_ptr(t) && t->type == 0;
}

int obs_tp_nargs(const struct nbpf_obs *obs, const char *name)
{
	const struct btf_type *p = tp_proto(obs, name);

	return p ? btf_vlen(p) - 1 : -1;
}

/*
 * io_uring opcode names, as the running kernel defines them (enum
 * io_uring_op in its BTF): new opcodes get their names without a table
 * here to keep up.  Kernel facts, the same for every session: filled once.
 */
#define URING_OPS 128
static char uring_ops[URING_OPS][24];

void obs_uring_ops(const struct nbpf_obs *obs)
{
	int id = btf__find_by_name_kind(obs->btf, "io_uring_op", BTF_KIND_ENUM);
	const struct btf_type *t = id > 0 ? btf__type_by_id(obs->btf, (__u32)id) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++) {
		const struct btf_enum *e = &btf_enum(t)[i];
		const char *name = btf__name_by_offset(obs->btf, e->name_off);

		if (e->val < 0 || e->val >= URING_OPS || !name || strncmp(name, "IORING_OP_", 10) ||
		    !strcmp(name, "IORING_OP_LAST"))
			continue;
		snprintf(uring_ops[e->val], sizeof(uring_ops[0]), "%s", name + 10);
	}
}

const char *nbpf_obs_uring_op_name(uint32_t op)
{
	return op < URING_OPS && uring_ops[op][0] ? uring_ops[op] : NULL;
}

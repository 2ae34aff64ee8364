// SPDX-License-Identifier: Apache-2.0
/*
 * observe.c - loading, attaching and detaching the kernel probe sets.
 *
 * Every program is listed once in a table with the tracepoint it needs
 * and the signal it serves.  Before anything is loaded, the table is
 * checked against the running kernel (BTF for typed raw tracepoints,
 * tracefs for classic ones), so a missing tracepoint switches off its
 * signal instead of failing the whole object at load time.
 */
#include "observe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "runtime/error.h"

#include "io.skel.h"
#include "net.skel.h"
#include "sched.skel.h"
#include "gpu.skel.h"

#define DEFAULT_BTF "/sys/kernel/btf/vmlinux"
#define MAX_LINKS 64

/*
 * TP_BTF: typed raw tracepoint (BTF args, the call cost of fentry, a stable
 * name); TP: classic tracepoint; FENTRY: fentry/fexit on a kernel function
 * (tp names the function), for kernels whose tracepoint is missing;
 * UPROBE: attached by hand to libcuda's symbols.
 */
enum attach_kind { TP_BTF, TP, FENTRY, UPROBE };

struct prog_spec {
	const char *prog;
	enum attach_kind kind;
	const char *cat, *tp;  /* tracepoint category (tracefs) and name */
	const char *signal;    /* what the user loses without it */
	const char *slot;      /* specs of one signal and slot are alternatives */
	bool required;         /* the set is useless without this signal */
};

static const struct prog_spec io_specs[] = {
	{ "io_block_issue", TP_BTF, "block", "block_rq_issue", "block latency", "issue", true },
	{ "io_block_complete", TP_BTF, "block", "block_rq_complete", "block latency", "complete", true },
	{ "io_block_start", TP_BTF, "block", "block_io_start", "block submitter attribution", "start", false },
	{ "io_block_start_fentry", FENTRY, NULL, "__blk_account_io_start", "block submitter attribution", "start", false },
	{ "io_uring_submit", TP, "io_uring", "io_uring_submit_req", "io_uring latency", "submit", false },
	{ "io_uring_submit_old", TP, "io_uring", "io_uring_submit_sqe", "io_uring latency", "submit", false },
	{ "io_uring_done", TP, "io_uring", "io_uring_complete", "io_uring latency", "complete", false },
	{ "io_pcache_get", TP, "filemap", "mm_filemap_get_pages", "page-cache lookups", "get", false },
	{ "io_pcache_add", TP, "filemap", "mm_filemap_add_to_page_cache", "page-cache misses", "add", false },
	{ 0 },
};

static const struct prog_spec net_specs[] = {
	{ "net_send", TP_BTF, "sock", "sock_send_length", "tcp bytes and srtt", "send", true },
	{ "net_send_fexit", FENTRY, NULL, "tcp_sendmsg", "tcp bytes and srtt", "send", true },
	{ "net_recv", TP_BTF, "sock", "sock_recv_length", "tcp bytes and srtt", "recv", true },
	{ "net_recv_fexit", FENTRY, NULL, "tcp_recvmsg", "tcp bytes and srtt", "recv", true },
	{ "net_retrans", TP_BTF, "tcp", "tcp_retransmit_skb", "tcp retransmits", "retrans", false },
	{ 0 },
};

static const struct prog_spec sched_specs[] = {
	{ "sched_sw", TP_BTF, "sched", "sched_switch", "run-queue latency", "switch", true },
	{ "sched_wake", TP_BTF, "sched", "sched_wakeup", "run-queue latency", "wakeup", true },
	{ "sched_wake_new", TP_BTF, "sched", "sched_wakeup_new", "new-thread run-queue latency", "new", false },
	{ "sched_migrate", TP_BTF, "sched", "sched_migrate_task", "NUMA migrations", "migrate", false },
	{ 0 },
};

static const struct prog_spec gpu_specs[] = {
	{ "gpu_ioctl_enter", TP, "syscalls", "sys_enter_ioctl", "ioctl on /dev/nvidia*", "enter", false },
	{ "gpu_ioctl_exit", TP, "syscalls", "sys_exit_ioctl", "ioctl on /dev/nvidia*", "exit", false },
	{ "gpu_launch", UPROBE, NULL, NULL, "CUDA launches", "launch", false },
	{ "gpu_sync_enter", UPROBE, NULL, NULL, "CUDA synchronize", "sync", false },
	{ "gpu_sync_exit", UPROBE, NULL, NULL, "CUDA synchronize", "sync_ret", false },
	{ "gpu_copy_enter", UPROBE, NULL, NULL, "CUDA copies", "copy", false },
	{ "gpu_copy_exit", UPROBE, NULL, NULL, "CUDA copies", "copy_ret", false },
	{ 0 },
};

/* CUDA driver entry points per uprobe program (the _ptsz/_ptds variants are per-thread streams). */
static const char *const cu_launch[] = {
	"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
	"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",
	"cuGraphLaunch_ptsz", NULL,
};
static const char *const cu_sync[] = {
	"cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize", "cuEventSynchronize",
	NULL,
};
static const char *const cu_copy[] = {
	"cuMemcpy", "cuMemcpy_ptds", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2",
	"cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", NULL,
};

struct obs_set {
	void *skel;
	struct bpf_object *obj;
	volatile obs_u64 *lost;
	void (*destroy)(void *skel);
	const struct prog_spec *specs;
	struct bpf_link *links[MAX_LINKS];
	int n_links;
};

struct nbpf_obs {
	struct nbpf_obs_opts o;
	struct obs_cfg cfg;
	struct obs_set sets[NBPF_OBS_NSETS];
	struct nbpf_obs_status st[NBPF_OBS_NSETS];
	struct btf *btf;
	int targets_fd, events_fd;
	struct ring_buffer *rb;
	bool fentry_probed, fentry_ok;
	nbpf_obs_event_fn ev_fn;
	void *ev_ctx;
	char libcuda[4096];
};

static const char *const set_names[NBPF_OBS_NSETS] = { "io", "net", "sched", "gpu" };

const char *nbpf_obs_set_name(int set)
{
	return set >= 0 && set < NBPF_OBS_NSETS ? set_names[set] : "?";
}

int nbpf_obs_parse_sets(const char *s, unsigned int *bits)
{
	char buf[256], *save = NULL;

	*bits = 0;
	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return nbpf_err(-EINVAL, "probe list too long");
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i;

		if (!strcmp(t, "all")) {
			*bits |= NBPF_OBS_ALL;
			continue;
		}
		for (i = 0; i < NBPF_OBS_NSETS && strcmp(t, set_names[i]); i++)
			;
		if (i == NBPF_OBS_NSETS)
			return nbpf_err(-EINVAL, "unknown probe set '%s' (io, net, sched, gpu)", t);
		*bits |= 1u << i;
	}
	return *bits ? 0 : nbpf_err(-EINVAL, "empty probe list");
}

void nbpf_obs_opts_env(struct nbpf_obs_opts *o)
{
	if (!o->btf_path)
		o->btf_path = getenv("NCCLBPF_OBSERVE_BTF");
	if (!o->libcuda)
		o->libcuda = getenv("NCCLBPF_OBSERVE_LIBCUDA");
	if (!o->numa)
		o->numa = getenv("NCCLBPF_OBSERVE_NUMA");
	if (!o->gpu_majors)
		o->gpu_majors = getenv("NCCLBPF_OBSERVE_GPU_MAJORS");
	if (!o->tp_rename)
		o->tp_rename = getenv("NCCLBPF_OBSERVE_TP_RENAME");
}

/* ---- libbpf's messages: kept for the error we report, printed only on request ---- */

static char lb_log[2048];
static size_t lb_len;

static int lb_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n <= 0)
		return 0;
	if (getenv("NCCLBPF_OBSERVE_VERBOSE"))
		fputs(line, stderr);
	/* Keep the tail: the last lines name the failure. */
	if (lb_len + strlen(line) >= sizeof(lb_log))
		lb_len = 0;
	lb_len += (size_t)snprintf(lb_log + lb_len, sizeof(lb_log) - lb_len, "%s", line);
	return 0;
}

/* ---- what the kernel and this process offer -------------------------------- */

static bool has_caps(void)
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

static const char *tracefs_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[128];

	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events", dirs[i]);
		if (!access(p, F_OK))
			return dirs[i];
	}
	/* Not mounted: mount it where libbpf looks first (needs CAP_SYS_ADMIN). */
	if (!mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

/* The name a tracepoint has after NCCLBPF_OBSERVE_TP_RENAME ("old=new,..."). */
static const char *tp_name(const struct nbpf_obs *obs, const char *tp, char *buf, size_t n)
{
	const char *r = obs->o.tp_rename;
	size_t len = strlen(tp);

	while (r && *r) {
		const char *end = strchr(r, ','), *eq = strchr(r, '=');

		if (!end)
			end = r + strlen(r);
		if (eq && eq < end && (size_t)(eq - r) == len && !strncmp(r, tp, len)) {
			snprintf(buf, n, "%.*s", (int)(end - eq - 1), eq + 1);
			return buf;
		}
		r = *end ? end + 1 : end;
	}
	return tp;
}

static bool tp_present(const struct nbpf_obs *obs, const struct prog_spec *sp, const char *name)
{
	char path[512], tn[160];
	const char *dir;

	if (sp->kind == TP_BTF) {
		snprintf(tn, sizeof(tn), "btf_trace_%s", name);
		return btf__find_by_name_kind(obs->btf, tn, BTF_KIND_TYPEDEF) > 0;
	}
	dir = tracefs_dir();
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s", dir, sp->cat, name);
	return !access(path, F_OK);
}

static void append(char *dst, size_t n, const char *fmt, ...)
{
	size_t len = strlen(dst);
	va_list ap;

	if (len && len + 2 < n) {
		strcat(dst, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(dst + len, n - len, fmt, ap);
	va_end(ap);
}

static bool find_libcuda(struct nbpf_obs *obs)
{
	static const char *const paths[] = {
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1",
		"/usr/lib/wsl/lib/libcuda.so.1",
	};

	if (obs->o.libcuda) {
		snprintf(obs->libcuda, sizeof(obs->libcuda), "%s", obs->o.libcuda);
		return !access(obs->libcuda, R_OK);
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
		if (!access(paths[i], R_OK)) {
			snprintf(obs->libcuda, sizeof(obs->libcuda), "%s", paths[i]);
			return true;
		}
	return false;
}

/* Character-device majors of the NVIDIA driver (195 and the dynamic ones, from /proc/devices). */
static int gpu_majors(struct nbpf_obs *obs)
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

/* ---- per-set skeleton glue ------------------------------------------------- */

#define SET_OPEN(name)                                                                          \
	static int open_##name(struct obs_set *s, const struct bpf_object_open_opts *oo,        \
			       const struct obs_cfg *cfg)                                       \
	{                                                                                       \
		struct obs_##name *sk = obs_##name##__open_opts(oo);                             \
                                                                                                \
		if (!sk)                                                                        \
			return -errno;                                                          \
		memcpy((void *)&sk->rodata->obs_cfg, cfg, sizeof(*cfg));                        \
		s->skel = sk;                                                                   \
		s->obj = sk->obj;                                                               \
		s->destroy = destroy_##name;                                                    \
		return 0;                                                                       \
	}                                                                                       \
	static volatile obs_u64 *lost_##name(struct obs_set *s)                                   \
	{                                                                                       \
		return (volatile obs_u64 *)&((struct obs_##name *)s->skel)->bss->obs_events_lost;                   \
	}

static void destroy_io(void *p) { obs_io__destroy(p); }
static void destroy_net(void *p) { obs_net__destroy(p); }
static void destroy_sched(void *p) { obs_sched__destroy(p); }
static void destroy_gpu(void *p) { obs_gpu__destroy(p); }
SET_OPEN(io)
SET_OPEN(net)
SET_OPEN(sched)
SET_OPEN(gpu)

static const struct {
	int (*open)(struct obs_set *, const struct bpf_object_open_opts *, const struct obs_cfg *);
	volatile obs_u64 *(*lost)(struct obs_set *);
	const struct prog_spec *specs;
} set_ops[NBPF_OBS_NSETS] = {
	{ open_io, lost_io, io_specs },
	{ open_net, lost_net, net_specs },
	{ open_sched, lost_sched, sched_specs },
	{ open_gpu, lost_gpu, gpu_specs },
};

static void set_unload(struct obs_set *s)
{
	for (int i = s->n_links - 1; i >= 0; i--)
		bpf_link__destroy(s->links[i]);
	s->n_links = 0;
	if (s->skel)
		s->destroy(s->skel);
	s->skel = NULL;
	s->obj = NULL;
	s->lost = NULL;
}

/*
 * Can this kernel attach fentry/fexit programs?  Kernels may have BTF and
 * still refuse trampolines (no DYNAMIC_FTRACE_WITH_DIRECT_CALLS, lockdown,
 * an LSM), so the only reliable test is to attach one: an empty program on
 * func, loaded and linked and closed again at once.
 */
static bool fentry_works(struct nbpf_obs *obs, const char *func)
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

/* Is sp's attach point available?  If not, why, in words, into why. */
static bool spec_present(struct nbpf_obs *obs, const struct prog_spec *sp, bool have_cuda,
			 bool have_majors, char *why, size_t n)
{
	char nb[160];
	const char *name;

	if (sp->kind == UPROBE) {
		if (!have_cuda)
			snprintf(why, n, "libcuda not found");
		return have_cuda;
	}
	if (sp->kind == TP && !strcmp(sp->cat, "syscalls") && !have_majors) {
		snprintf(why, n, "no /dev/nvidia* devices");
		return false;
	}
	name = tp_name(obs, sp->tp, nb, sizeof(nb));
	if (sp->kind == FENTRY) {
		if (btf__find_by_name_kind(obs->btf, name, BTF_KIND_FUNC) <= 0) {
			snprintf(why, n, "no kernel function %s", name);
			return false;
		}
		if (!fentry_works(obs, name)) {
			snprintf(why, n, "%s: this kernel refuses fentry/fexit attachment", name);
			return false;
		}
		return true;
	}
	if (!tp_present(obs, sp, name)) {
		snprintf(why, n, "no tracepoint %s/%s in this kernel", sp->cat, name);
		return false;
	}
	return true;
}

/*
 * Decides which programs of a set load.  The specs of one signal and slot
 * are alternatives in order of preference; the first present one loads.
 * A signal is on when each of its slots has one.  Returns false when a
 * required signal is off (reason in st->error).
 */
static bool set_select(struct nbpf_obs *obs, int set, bool have_cuda, bool have_majors)
{
	struct obs_set *s = &obs->sets[set];
	struct nbpf_obs_status *st = &obs->st[set];
	const struct prog_spec *sp = s->specs;
	bool load[24] = { 0 }, ok = true;
	int n = 0;

	while (sp[n].prog)
		n++;
	for (int i = 0; i < n; i++) {
		bool first_of_signal = true, on = true;
		char reasons[512] = "", via[256] = "";

		for (int j = 0; j < i && first_of_signal; j++)
			first_of_signal = strcmp(sp[j].signal, sp[i].signal) != 0;
		if (!first_of_signal)
			continue;
		/* Each slot of this signal: its first present alternative, tried in order. */
		for (int j = i; j < n; j++) {
			char first_why[192] = "", slot_why[384] = "";
			int pick = -1, first = -1;
			bool seen = false;

			if (strcmp(sp[j].signal, sp[i].signal))
				continue;
			for (int k = i; k < j && !seen; k++)
				seen = !strcmp(sp[k].signal, sp[i].signal) && !strcmp(sp[k].slot, sp[j].slot);
			if (seen)
				continue;
			for (int k = j; k < n && pick < 0; k++) {
				char why[192] = "";

				if (strcmp(sp[k].signal, sp[i].signal) || strcmp(sp[k].slot, sp[j].slot))
					continue;
				if (spec_present(obs, &sp[k], have_cuda, have_majors, why, sizeof(why))) {
					pick = k;
					break;
				}
				if (first < 0) {
					first = k;
					snprintf(first_why, sizeof(first_why), "%s", why);
				}
				if (!strstr(slot_why, why))
					append(slot_why, sizeof(slot_why), "%s", why);
			}
			if (pick < 0) {
				on = false;
				if (!strstr(reasons, slot_why))
					append(reasons, sizeof(reasons), "%s", slot_why);
				continue;
			}
			load[pick] = true;
			if (first >= 0 && sp[pick].kind == FENTRY)
				append(via, sizeof(via), "%s via %s (%s)", sp[i].signal, sp[pick].prog, first_why);
		}
		if (!on) {
			for (int j = i; j < n; j++)
				if (!strcmp(sp[j].signal, sp[i].signal))
					load[j] = false;
			if (sp[i].required) {
				append(st->error, sizeof(st->error), "%s: %s", sp[i].signal, reasons);
				ok = false;
			} else {
				append(st->missing, sizeof(st->missing), "%s (%s)", sp[i].signal, reasons);
			}
		} else if (via[0]) {
			append(st->via, sizeof(st->via), "%s", via);
		}
	}
	/*
	 * Naming an attach target makes libbpf 1.1 parse the kernel's BTF into
	 * the object, freed only by a load: a set that will not load gets none.
	 */
	for (int i = 0; ok && i < n; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(s->obj, sp[i].prog);
		char nb[160];

		if (!p)
			continue;
		bpf_program__set_autoload(p, load[i]);
		if (load[i] && (sp[i].kind == TP_BTF || sp[i].kind == FENTRY))
			bpf_program__set_attach_target(p, 0, tp_name(obs, sp[i].tp, nb, sizeof(nb)));
	}
	return ok;
}

static int add_link(struct obs_set *s, struct bpf_link *l)
{
	if (!l)
		return -errno ? -errno : -EINVAL;
	if (s->n_links == MAX_LINKS) {
		bpf_link__destroy(l);
		return -E2BIG;
	}
	s->links[s->n_links++] = l;
	return 0;
}

/* Uprobes on every entry point libcuda has; a missing symbol is not an error. */
static int attach_uprobes(struct nbpf_obs *obs, struct obs_set *s, const char *prog,
			  const char *const *syms, bool ret)
{
	struct bpf_program *p = bpf_object__find_program_by_name(s->obj, prog);
	int n = 0;

	if (!p || !bpf_program__autoload(p))
		return 0;
	for (int i = 0; syms[i]; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = syms[i], .retprobe = ret);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(p, -1, obs->libcuda, 0, &uo);

		if (l && !add_link(s, l))
			n++;
	}
	return n;
}

static int set_attach(struct nbpf_obs *obs, int set)
{
	struct obs_set *s = &obs->sets[set];
	struct nbpf_obs_status *st = &obs->st[set];
	int err;

	for (int i = 0; s->specs[i].prog; i++) {
		const struct prog_spec *sp = &s->specs[i];
		struct bpf_program *p = bpf_object__find_program_by_name(s->obj, sp->prog);
		struct bpf_link *l;
		char nb[160];

		if (!p || !bpf_program__autoload(p) || sp->kind == UPROBE)
			continue;
		if (sp->kind == TP)
			l = bpf_program__attach_tracepoint(p, sp->cat, tp_name(obs, sp->tp, nb, sizeof(nb)));
		else
			l = bpf_program__attach(p);
		if ((err = add_link(s, l)))
			return nbpf_err(err, "%s: attaching %s to %s/%s: %s", set_names[set], sp->prog,
					sp->cat ? sp->cat : "fentry", tp_name(obs, sp->tp, nb, sizeof(nb)),
					strerror(-err));
	}
	if (set == NBPF_OBS_GPU && obs->libcuda[0]) {
		int n = attach_uprobes(obs, s, "gpu_launch", cu_launch, false);

		n += attach_uprobes(obs, s, "gpu_sync_enter", cu_sync, false);
		n += attach_uprobes(obs, s, "gpu_sync_exit", cu_sync, true);
		n += attach_uprobes(obs, s, "gpu_copy_enter", cu_copy, false);
		n += attach_uprobes(obs, s, "gpu_copy_exit", cu_copy, true);
		if (!n)
			append(st->missing, sizeof(st->missing), "CUDA entry points (none found in %s)",
			       obs->libcuda);
	}
	st->n_links = s->n_links;
	return 0;
}

static int fill_numa(struct nbpf_obs *obs, struct obs_set *s)
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

/*
 * The v2 cgroup id is the directory's inode number; its level is its depth
 * below the cgroup2 mount (wherever that is: /sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid systems), found by walking up while the
 * parent is on the same file system.
 */
static int cgroup_target(struct nbpf_obs *obs)
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

int nbpf_obs_open(const struct nbpf_obs_opts *o, struct nbpf_obs **out)
{
	const char *btf_path = o->btf_path ? o->btf_path : DEFAULT_BTF;
	struct nbpf_obs *obs = calloc(1, sizeof(*obs));
	bool have_cuda = false, have_majors = false;
	int err = 0, n_attached = 0;

	*out = NULL;
	if (!obs)
		return nbpf_err(-ENOMEM, "out of memory");
	obs->o = *o;
	obs->targets_fd = obs->events_fd = -1;
	if (!obs->o.probes)
		obs->o.probes = NBPF_OBS_ALL;
	obs->cfg.mode = o->mode;
	obs->cfg.outlier_ns = o->outlier_ns ? o->outlier_ns : 10 * 1000 * 1000ull;
	lb_len = 0;
	lb_log[0] = 0;
	libbpf_set_print(lb_print);

	if (!has_caps()) {
		err = nbpf_err(-EPERM, "needs root, or CAP_BPF and CAP_PERFMON (this process has "
				       "neither CAP_SYS_ADMIN nor both of those): run it with sudo, or "
				       "setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep on the binary");
		goto fail;
	}
	obs->btf = btf__parse(btf_path, NULL);
	if (!obs->btf) {
		err = -errno;
		err = nbpf_err(err ? err : -ENOENT,
			       "kernel BTF %s: %s (CO-RE needs a kernel built with CONFIG_DEBUG_INFO_BTF, "
			       "or --btf FILE)", btf_path, strerror(err ? -err : ENOENT));
		goto fail;
	}
	if (!tracefs_dir()) {
		err = nbpf_err(-ENOENT, "tracefs is not mounted and cannot be mounted at "
					"/sys/kernel/tracing");
		goto fail;
	}
	if (o->mode == OBS_MODE_CGROUP && (err = cgroup_target(obs)))
		goto fail;
	if (o->mode == OBS_MODE_COMM) {
		if (!o->comm || !o->comm[0] || strlen(o->comm) >= OBS_COMM_LEN) {
			err = nbpf_err(-EINVAL, "comm must be 1 to %d characters", OBS_COMM_LEN - 1);
			goto fail;
		}
		memcpy(obs->cfg.comm, o->comm, strlen(o->comm));
	}
	if (obs->o.probes & (1u << NBPF_OBS_GPU)) {
		int n = gpu_majors(obs);

		if (n < 0) {
			err = n;
			goto fail;
		}
		have_majors = n > 0;
		have_cuda = find_libcuda(obs);
		if (!have_cuda)
			obs->libcuda[0] = 0;
	}

	for (int set = 0; set < NBPF_OBS_NSETS; set++) {
		LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = o->btf_path);
		struct obs_set *s = &obs->sets[set];
		struct nbpf_obs_status *st = &obs->st[set];
		bool any = false;

		if (!(obs->o.probes & (1u << set)))
			continue;
		st->wanted = true;
		s->specs = set_ops[set].specs;
		if ((err = set_ops[set].open(s, &oo, &obs->cfg))) {
			err = nbpf_err(err, "%s: opening the BPF object: %s", set_names[set], strerror(-err));
			goto fail;
		}
		if (!set_select(obs, set, have_cuda, have_majors)) {
			set_unload(s);
			if (obs->o.strict) {
				err = nbpf_err(-ENOENT, "%s: not attached: %s", set_names[set], st->error);
				goto fail;
			}
			continue;
		}
		for (int i = 0; s->specs[i].prog; i++) {
			struct bpf_program *p = bpf_object__find_program_by_name(s->obj, s->specs[i].prog);

			any |= p && bpf_program__autoload(p);
		}
		if (!any) {
			memcpy(st->error, st->missing, sizeof(st->error));
			st->missing[0] = 0;
			set_unload(s);
			if (obs->o.strict) {
				err = nbpf_err(-ENOENT, "%s: not attached: %s", set_names[set], st->error);
				goto fail;
			}
			continue;
		}
		/* One target table and one outlier ring for all sets. */
		if (obs->targets_fd >= 0)
			bpf_map__reuse_fd(bpf_object__find_map_by_name(s->obj, "targets"), obs->targets_fd);
		if (obs->events_fd >= 0)
			bpf_map__reuse_fd(bpf_object__find_map_by_name(s->obj, "events"), obs->events_fd);
		if ((err = bpf_object__load(s->obj))) {
			char *nl;

			/* The verifier's or libbpf's last words are the useful part. */
			while ((nl = strrchr(lb_log, '\n')) && !nl[1])
				*nl = 0;
			nl = strrchr(lb_log, '\n');
			err = nbpf_err(err, "%s: loading into the kernel failed: %s%s%s", set_names[set],
				       strerror(-err), lb_log[0] ? ": " : "", nl ? nl + 1 : lb_log);
			goto fail;
		}
		s->lost = set_ops[set].lost(s);
		if (obs->targets_fd < 0) {
			obs->targets_fd = dup(bpf_map__fd(bpf_object__find_map_by_name(s->obj, "targets")));
			obs->events_fd = dup(bpf_map__fd(bpf_object__find_map_by_name(s->obj, "events")));
		}
		if (set == NBPF_OBS_SCHED && (err = fill_numa(obs, s)))
			goto fail;
	}
	for (int i = 0; i < o->n_pids; i++)
		if (obs->targets_fd >= 0 && (err = nbpf_obs_add_pid(obs, o->pids[i])))
			goto fail;
	/* Attach only once everything loaded: a failure here detaches all of it again. */
	for (int set = 0; set < NBPF_OBS_NSETS; set++) {
		if (!obs->sets[set].skel)
			continue;
		if ((err = set_attach(obs, set)))
			goto fail;
		obs->st[set].attached = true;
		n_attached++;
	}
	if (!n_attached) {
		err = nbpf_err(-ENOENT, "no probe set could be attached");
		goto fail;
	}
	/* The caller's arrays and strings need not outlive this call. */
	obs->o.pids = NULL;
	obs->o.n_pids = 0;
	obs->o.cgroup = obs->o.comm = obs->o.btf_path = obs->o.libcuda = NULL;
	obs->o.numa = obs->o.gpu_majors = obs->o.tp_rename = NULL;
	*out = obs;
	return 0;
fail:
	nbpf_obs_close(obs);
	return err;
}

void nbpf_obs_close(struct nbpf_obs *obs)
{
	if (!obs)
		return;
	ring_buffer__free(obs->rb);
	for (int set = NBPF_OBS_NSETS - 1; set >= 0; set--)
		set_unload(&obs->sets[set]);
	if (obs->targets_fd >= 0)
		close(obs->targets_fd);
	if (obs->events_fd >= 0)
		close(obs->events_fd);
	btf__free(obs->btf);
	free(obs);
}

const struct nbpf_obs_status *nbpf_obs_status(const struct nbpf_obs *obs, int set)
{
	return set >= 0 && set < NBPF_OBS_NSETS ? &obs->st[set] : NULL;
}

int nbpf_obs_add_pid(struct nbpf_obs *obs, int pid)
{
	__u32 k = (__u32)pid, v = 1;

	if (obs->targets_fd < 0)
		return 0;
	if (bpf_map_update_elem(obs->targets_fd, &k, &v, BPF_ANY))
		return nbpf_err(-errno, "pid %d: adding to the target table: %s", pid, strerror(errno));
	return 0;
}

int nbpf_obs_del_pid(struct nbpf_obs *obs, int pid)
{
	__u32 k = (__u32)pid;

	if (obs->targets_fd >= 0 && bpf_map_delete_elem(obs->targets_fd, &k) && errno != ENOENT)
		return -errno;
	return 0;
}

/* ---- outliers --------------------------------------------------------------- */

static int on_event(void *ctx, void *data, size_t len)
{
	struct nbpf_obs *obs = ctx;

	if (len >= sizeof(struct obs_event) && obs->ev_fn)
		obs->ev_fn(obs->ev_ctx, data);
	return 0;
}

int nbpf_obs_poll(struct nbpf_obs *obs, int timeout_ms, nbpf_obs_event_fn fn, void *ctx)
{
	int n;

	if (obs->events_fd < 0)
		return 0;
	if (!obs->rb) {
		obs->rb = ring_buffer__new(obs->events_fd, on_event, obs, NULL);
		if (!obs->rb)
			return nbpf_err(-errno, "outlier ring buffer: %s", strerror(errno));
	}
	obs->ev_fn = fn;
	obs->ev_ctx = ctx;
	n = ring_buffer__poll(obs->rb, timeout_ms);
	return n < 0 && n != -EINTR ? n : 0;
}

/* Shared with snapshot.c. */
struct bpf_object *nbpf_obs__obj(struct nbpf_obs *obs, int set);
uint64_t nbpf_obs__lost(struct nbpf_obs *obs);

struct bpf_object *nbpf_obs__obj(struct nbpf_obs *obs, int set)
{
	return obs->st[set].attached ? obs->sets[set].obj : NULL;
}

uint64_t nbpf_obs__lost(struct nbpf_obs *obs)
{
	uint64_t n = 0;

	for (int set = 0; set < NBPF_OBS_NSETS; set++)
		if (obs->sets[set].lost)
			n += *obs->sets[set].lost;
	return n;
}

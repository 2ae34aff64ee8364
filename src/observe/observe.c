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
#include "observe_int.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "runtime/error.h"

#include "io.skel.h"
#include "net.skel.h"
#include "sched.skel.h"
#include "gpu.skel.h"

#define DEFAULT_BTF "/sys/kernel/btf/vmlinux"
#define TARGET_BITS_SIZE ((size_t)OBS_PID_WORDS * sizeof(obs_u64))

static const struct prog_spec io_specs[] = {
	{ "io_block_complete", TP_BTF, "block", "block_rq_complete", "block latency", "complete", true },
	{ "io_block_start", TP_BTF, "block", "block_io_start", "block submitter attribution", "start", false },
	{ "io_block_start_fentry", FENTRY, NULL, "__blk_account_io_start", "block submitter attribution", "start", false },
	/* Neither: the request claimed as it is issued, by the issuer. */
	{ "io_block_issue", TP_BTF, "block", "block_rq_issue", "block submitter attribution", "start", false },
	{ "io_block_merge", TP_BTF, "block", "block_rq_merge", "block requests merged away", "merge", false },
	{ "io_uring_submit_btf", TP_BTF, "io_uring", "io_uring_submit_req", "io_uring latency", "submit", false },
	{ "io_uring_submit", TP, "io_uring", "io_uring_submit_req", "io_uring latency", "submit", false },
	{ "io_uring_submit_old", TP, "io_uring", "io_uring_submit_sqe", "io_uring latency", "submit", false },
	{ "io_uring_done_btf", TP_BTF, "io_uring", "io_uring_complete", "io_uring latency", "complete", false },
	{ "io_uring_done", TP, "io_uring", "io_uring_complete", "io_uring latency", "complete", false },
	{ "io_pcache_get_btf", TP_BTF, "filemap", "mm_filemap_get_pages", "page-cache lookups", "get", false },
	{ "io_pcache_get", TP, "filemap", "mm_filemap_get_pages", "page-cache lookups", "get", false },
	{ "io_pcache_add_btf", TP_BTF, "filemap", "mm_filemap_add_to_page_cache", "page-cache misses", "add", false },
	{ "io_pcache_add", TP, "filemap", "mm_filemap_add_to_page_cache", "page-cache misses", "add", false },
	{ 0 },
};

static const struct prog_spec net_specs[] = {
	{ "net_iter", ITER, NULL, "task_file", "tcp connections", "scan", true },
	{ "net_state_btf", TP_BTF, "sock", "inet_sock_set_state", "tcp connections", "state", true },
	{ "net_state", TP, "sock", "inet_sock_set_state", "tcp connections", "state", true },
	{ "net_retrans", TP_BTF, "tcp", "tcp_retransmit_skb", "tcp retransmit outliers", "retrans", false },
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
/*
 * cudaDeviceSynchronize reaches the driver as cuCtxSynchronize_v2 on recent
 * drivers (580): without it a real job's synchronizes were not counted.
 */
static const char *const cu_sync[] = {
	"cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
	"cuCtxSynchronize_v2", "cuEventSynchronize", NULL,
};
static const char *const cu_copy[] = {
	"cuMemcpy", "cuMemcpy_ptds", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2",
	"cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", NULL,
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
	if (!o->blk_test)
		o->blk_test = getenv("NCCLBPF_OBSERVE_BLK_TEST");
}

/* "SLOTS,STALE_JIFFIES,DROP" into cfg's blk_test_* (see struct obs_cfg). */
static int parse_blk_test(const char *s, struct obs_cfg *cfg)
{
	unsigned int slots, stale, drop;
	int end = 0;

	if (sscanf(s, "%u,%u,%u%n", &slots, &stale, &drop, &end) != 3 || s[end] ||
	    (slots && (slots < OBS_INFL_WAYS || slots > OBS_INFL_SLOTS || slots & (slots - 1))))
		return nbpf_err(-EINVAL, "NCCLBPF_OBSERVE_BLK_TEST '%s': want SLOTS,STALE_JIFFIES,DROP "
				"(SLOTS 0 or a power of two from %u to %u)", s, OBS_INFL_WAYS, OBS_INFL_SLOTS);
	cfg->blk_test_slots = slots;
	cfg->blk_test_stale_j = stale;
	cfg->blk_test_drop = drop;
	return 0;
}

/* ---- libbpf's messages: kept for the error we report, printed only on request ---- */

static char lb_log[2048];
static size_t lb_len;

static int lb_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	va_list full;
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	/* Verbose: the whole message (a verifier log is longer than a line). */
	if (getenv("NCCLBPF_OBSERVE_VERBOSE")) {
		va_copy(full, ap);
		vfprintf(stderr, fmt, full);
		va_end(full);
	}
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n <= 0)
		return 0;
	/* Keep the tail: the last lines name the failure. */
	if (lb_len + strlen(line) >= sizeof(lb_log))
		lb_len = 0;
	lb_len += (size_t)snprintf(lb_log + lb_len, sizeof(lb_log) - lb_len, "%s", line);
	return 0;
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

/* ---- per-set skeleton glue ------------------------------------------------- */

/*
 * open_<set>: the skeleton opened with the configuration in .rodata;
 * load_<set>: loaded through the skeleton, which maps .bss onto the kernel's
 * map (bpf_object__load alone leaves it on the copy made at open, reading 0
 * for ever, with libbpf 1.1); lost_<set>: its .bss counter.
 */
#define SET_OPEN(name)                                                                     \
	static int open_##name(struct obs_set *s, const struct bpf_object_open_opts *oo,   \
			       const struct obs_cfg *cfg)                                  \
	{                                                                                  \
		struct obs_##name *sk = obs_##name##__open_opts(oo);                        \
                                                                                           \
		if (!sk)                                                                   \
			return -errno;                                                     \
		memcpy((void *)&sk->rodata->obs_cfg, cfg, sizeof(*cfg));                   \
		s->skel = sk;                                                              \
		s->obj = sk->obj;                                                          \
		s->destroy = destroy_##name;                                               \
		return 0;                                                                  \
	}                                                                                  \
	static int load_##name(struct obs_set *s)                                          \
	{                                                                                  \
		return obs_##name##__load(s->skel);                                        \
	}                                                                                  \
	static volatile obs_u64 *lost_##name(struct obs_set *s)                            \
	{                                                                                  \
		struct obs_##name *sk = s->skel;                                           \
                                                                                           \
		return (volatile obs_u64 *)&sk->bss->obs_events_lost;                      \
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
	int (*load)(struct obs_set *);
	volatile obs_u64 *(*lost)(struct obs_set *);
	const struct prog_spec *specs;
} set_ops[NBPF_OBS_NSETS] = {
	{ open_io, load_io, lost_io, io_specs },
	{ open_net, load_net, lost_net, net_specs },
	{ open_sched, load_sched, lost_sched, sched_specs },
	{ open_gpu, load_gpu, lost_gpu, gpu_specs },
};

static void links_destroy(struct obs_links *lk)
{
	for (int i = lk->n - 1; i >= 0; i--)
		bpf_link__destroy(lk->v[i]);
	free(lk->v);
	*lk = (struct obs_links){ 0 };
}

static void set_unload(struct obs_set *s)
{
	links_destroy(&s->lk);
	if (s->skel)
		s->destroy(s->skel);
	s->skel = NULL;
	s->obj = NULL;
	s->lost = NULL;
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
	if (sp->kind == ITER) {
		snprintf(nb, sizeof(nb), "bpf_iter__%s", sp->tp);
		if (btf__find_by_name_kind(obs->btf, nb, BTF_KIND_STRUCT) <= 0) {
			snprintf(why, n, "no %s iterator in this kernel", sp->tp);
			return false;
		}
		return true;
	}
	if (sp->kind == TP && !strcmp(sp->cat, "syscalls") && !have_majors) {
		snprintf(why, n, "no /dev/nvidia* devices");
		return false;
	}
	name = obs_tp_name(obs, sp, nb, sizeof(nb));
	if (sp->kind == FENTRY) {
		if (btf__find_by_name_kind(obs->btf, name, BTF_KIND_FUNC) <= 0) {
			snprintf(why, n, "no kernel function %s", name);
			return false;
		}
		if (!obs_fentry_works(obs, name)) {
			snprintf(why, n, "%s: this kernel refuses fentry/fexit attachment", name);
			return false;
		}
		return true;
	}
	if (!obs_tp_present(obs, sp, name)) {
		snprintf(why, n, "no tracepoint %s/%s in this kernel%s", sp->cat, name,
			 sp->kind == TP_BTF ? "'s BTF" : "");
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
		char reasons[512] = "", via[512] = "";

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
			/* Not the first choice: say which one runs, and why (a classic tracepoint costs more). */
			if (first >= 0)
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
			bpf_program__set_attach_target(p, 0, obs_tp_name(obs, &sp[i], nb, sizeof(nb)));
	}
	return ok;
}

/*
 * With the scheduler's own queue stamps, sched_switch alone times the run
 * queue: the wakeup programs, which run for every wakeup on the machine,
 * stay out.  Without, they are the route, and the status says so.
 */
static void sched_route(struct nbpf_obs *obs, struct obs_set *s)
{
	static const char *const wake[] = { "sched_wake", "sched_wake_new" };
	struct nbpf_obs_status *st = &obs->st[NBPF_OBS_SCHED];

	if (!(obs->cfg.flags & OBS_CFG_SCHED_INFO)) {
		append(st->via, sizeof(st->via), "run-queue latency via sched_wake (no sched_info "
			"queue stamps readable in this kernel)");
		return;
	}
	for (size_t i = 0; i < sizeof(wake) / sizeof(wake[0]); i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(s->obj, wake[i]);

		if (p)
			bpf_program__set_autoload(p, false);
	}
}

/*
 * The programs that make a target's forked children targets (obs_fork) and
 * take exited processes out (obs_exit): one instance each, in the first set
 * loaded, for pid and comm targets.
 */
static void fork_select(struct nbpf_obs *obs, struct obs_set *s)
{
	static const struct prog_spec specs[] = {
		{ "obs_fork", TP_BTF, "sched", "sched_process_fork", "", "", false },
		{ "obs_exit", TP_BTF, "sched", "sched_process_exit", "", "", false },
	};
	bool on = !obs->fork_loaded && obs->cfg.mode != OBS_MODE_CGROUP;

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(s->obj, specs[i].prog);

		if (p)
			bpf_program__set_autoload(p, on && obs_tp_present(obs, &specs[i], specs[i].tp));
	}
	obs->fork_loaded |= on;
}

static int add_link(struct obs_links *lk, struct bpf_link *l)
{
	if (!l)
		return -errno ? -errno : -EINVAL;
	if (lk->n == lk->cap) {
		int cap = lk->cap ? lk->cap * 2 : 32;
		struct bpf_link **v = realloc(lk->v, (size_t)cap * sizeof(*v));

		if (!v) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
		lk->v = v;
		lk->cap = cap;
	}
	lk->v[lk->n++] = l;
	return 0;
}

/*
 * Uprobes on every entry point libcuda has (a missing symbol is not an
 * error), in process pid only, or in every process with pid -1.  A uprobe
 * traps in every process it covers, so pid-targeted sessions attach per
 * process: other CUDA programs on the node pay nothing.
 */
static int attach_uprobes(struct nbpf_obs *obs, struct obs_links *lk, const char *prog,
			  const char *const *syms, bool ret, int pid)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obs->sets[NBPF_OBS_GPU].obj, prog);
	int n = 0;

	if (!p || !bpf_program__autoload(p))
		return 0;
	for (int i = 0; syms[i]; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = syms[i], .retprobe = ret);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(p, pid, obs->libcuda, 0, &uo);

		if (l && !add_link(lk, l))
			n++;
	}
	return n;
}

static void cuda_count_links(struct nbpf_obs *obs)
{
	int n = obs->sets[NBPF_OBS_GPU].lk.n;

	for (int i = 0; i < obs->n_cuda; i++)
		n += obs->cuda[i].lk.n;
	obs->st[NBPF_OBS_GPU].n_links = n;
}

/*
 * All CUDA uprobes for one process (or all, pid -1): how many attached.
 * A process that has its uprobes already gets none again.
 */
static int attach_cuda(struct nbpf_obs *obs, int pid)
{
	struct obs_links *lk = &obs->sets[NBPF_OBS_GPU].lk;
	int n;

	if (pid > 0) {
		for (int i = 0; i < obs->n_cuda; i++)
			if (obs->cuda[i].pid == pid)
				return 0;
		if (obs->n_cuda == obs->cap_cuda) {
			int cap = obs->cap_cuda ? obs->cap_cuda * 2 : 16;
			struct obs_cuda_proc *v = realloc(obs->cuda, (size_t)cap * sizeof(*v));

			if (!v)
				return 0;
			obs->cuda = v;
			obs->cap_cuda = cap;
		}
		obs->cuda[obs->n_cuda] = (struct obs_cuda_proc){ .pid = pid };
		lk = &obs->cuda[obs->n_cuda++].lk;
	}
	n = attach_uprobes(obs, lk, "gpu_launch", cu_launch, false, pid);
	n += attach_uprobes(obs, lk, "gpu_sync_enter", cu_sync, false, pid);
	n += attach_uprobes(obs, lk, "gpu_sync_exit", cu_sync, true, pid);
	n += attach_uprobes(obs, lk, "gpu_copy_enter", cu_copy, false, pid);
	n += attach_uprobes(obs, lk, "gpu_copy_exit", cu_copy, true, pid);
	cuda_count_links(obs);
	return n;
}

static bool is_target(struct nbpf_obs *obs, int pid)
{
	obs_u64 w = __atomic_load_n(&obs->target_bits[(unsigned int)pid / 64], __ATOMIC_ACQUIRE);

	return w >> ((unsigned int)pid % 64) & 1;
}

/*
 * Target processes the job forked since (obs_fork set their bits in the
 * kernel) get their uprobes: a rank started by a launcher named with
 * --pid makes its CUDA calls in a child.  A child's calls before the
 * snapshot after its fork are not seen.  Processes that exited, or are
 * no longer targets, give theirs back.
 */
void obs_cuda_follow(struct nbpf_obs *obs)
{
	int pids[1024], n;

	if (!obs->st[NBPF_OBS_GPU].attached || !obs->libcuda[0] || obs->cfg.mode != OBS_MODE_PIDS ||
	    !obs->target_bits)
		return;
	for (int i = 0; i < obs->n_cuda; i++) {
		int pid = obs->cuda[i].pid;

		if (is_target(obs, pid) && !(kill(pid, 0) && errno == ESRCH))
			continue;
		links_destroy(&obs->cuda[i].lk);
		obs->cuda[i--] = obs->cuda[--obs->n_cuda];
	}
	n = nbpf_obs_targets(obs, pids, (int)(sizeof(pids) / sizeof(pids[0])));
	for (int i = 0; i < n && i < (int)(sizeof(pids) / sizeof(pids[0])); i++)
		attach_cuda(obs, pids[i]);
	cuda_count_links(obs);
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

		if (!p || !bpf_program__autoload(p) || sp->kind == UPROBE || sp->kind == ITER)
			continue;
		if (sp->kind == TP)
			l = bpf_program__attach_tracepoint(p, sp->cat, obs_tp_name(obs, sp, nb, sizeof(nb)));
		else
			l = bpf_program__attach(p);
		if ((err = add_link(&s->lk, l)))
			return nbpf_err(err, "%s: attaching %s to %s/%s: %s", set_names[set], sp->prog,
					sp->cat ? sp->cat : "fentry", obs_tp_name(obs, sp, nb, sizeof(nb)),
					strerror(-err));
	}
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "obs_exit" : "obs_fork";
		struct bpf_program *p = bpf_object__find_program_by_name(s->obj, name);

		if (p && bpf_program__autoload(p) && (err = add_link(&s->lk, bpf_program__attach(p))))
			return nbpf_err(err, "%s: attaching %s: %s", set_names[set], name, strerror(-err));
	}
	if (set == NBPF_OBS_GPU && obs->libcuda[0]) {
		int n = 0;

		if (obs->cfg.mode != OBS_MODE_PIDS)
			n = attach_cuda(obs, -1);
		for (int i = 0; obs->cfg.mode == OBS_MODE_PIDS && i < obs->o.n_pids; i++)
			n += attach_cuda(obs, obs->o.pids[i]);
		if (!n)
			append(st->missing, sizeof(st->missing), "CUDA entry points (none found in %s)",
			       obs->libcuda);
	}
	st->n_links = s->lk.n;
	if (set == NBPF_OBS_GPU)
		cuda_count_links(obs);
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
	obs->targets_fd = obs->events_fd = obs->tier_ctl_fd = obs->tier_bucket_fd = -1;
	if (!obs->o.probes)
		obs->o.probes = NBPF_OBS_ALL;
	obs->cfg.mode = o->mode;
	obs->cfg.outlier_ns = o->outlier_ns ? o->outlier_ns : 10 * 1000 * 1000ull;
	if (o->numa_events)
		obs->cfg.flags |= OBS_CFG_NUMA_EVENTS;
	if (o->deep)
		obs->cfg.flags |= OBS_CFG_DEEP;
	if (o->blk_test && (err = parse_blk_test(o->blk_test, &obs->cfg)))
		goto fail;
	lb_len = 0;
	lb_log[0] = 0;
	libbpf_set_print(lb_print);

	if (!obs_has_caps()) {
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
	obs_uring_ops(obs);
	if (obs_tp_nargs(obs, "tcp_retransmit_skb") >= 3)
		obs->cfg.flags |= OBS_CFG_RETRANS_ERR;
	if (obs_sched_info(obs))
		obs->cfg.flags |= OBS_CFG_SCHED_INFO;
	{
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		obs->cfg.t0_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	}
	if (obs_tp_arg_is_void_ptr(obs, "io_uring_complete", 1))
		obs->cfg.flags |= OBS_CFG_URING_REQ_VOID;
	if (obs_blk_unstamped())
		obs->cfg.flags |= OBS_CFG_BLK_UNSTAMPED;
	if (!obs_tracefs_dir()) {
		err = nbpf_err(-ENOENT, "tracefs at /sys/kernel/tracing is not mounted or not "
					"readable (mounting it needs CAP_SYS_ADMIN, reading it as "
					"another user than root CAP_DAC_READ_SEARCH)");
		goto fail;
	}
	if (o->mode == OBS_MODE_CGROUP && (err = obs_cgroup_target(obs)))
		goto fail;
	if (o->mode == OBS_MODE_COMM) {
		if (!o->comm || !o->comm[0] || strlen(o->comm) >= OBS_COMM_LEN) {
			err = nbpf_err(-EINVAL, "comm must be 1 to %d characters", OBS_COMM_LEN - 1);
			goto fail;
		}
		memcpy(obs->cfg.comm, o->comm, strlen(o->comm));
	}
	if (obs->o.probes & (1u << NBPF_OBS_GPU)) {
		int n = obs_gpu_majors(obs);

		if (n < 0) {
			err = n;
			goto fail;
		}
		have_majors = n > 0;
		have_cuda = obs_find_libcuda(obs);
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
		if (set == NBPF_OBS_SCHED)
			sched_route(obs, s);
		fork_select(obs, s);
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
		if (obs->tier_ctl_fd >= 0) {
			bpf_map__reuse_fd(bpf_object__find_map_by_name(s->obj, "tier_ctl"), obs->tier_ctl_fd);
			bpf_map__reuse_fd(bpf_object__find_map_by_name(s->obj, "tier_bucket"),
					  obs->tier_bucket_fd);
		}
		if ((err = set_ops[set].load(s))) {
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
			obs->tier_ctl_fd = dup(bpf_map__fd(bpf_object__find_map_by_name(s->obj, "tier_ctl")));
			obs->tier_bucket_fd = dup(bpf_map__fd(bpf_object__find_map_by_name(s->obj,
											 "tier_bucket")));
			if (obs->targets_fd < 0 || obs->events_fd < 0 || obs->tier_ctl_fd < 0 ||
			    obs->tier_bucket_fd < 0) {
				err = nbpf_err(-errno, "dup: %s", strerror(errno));
				goto fail;
			}
			obs->target_bits = mmap(NULL, TARGET_BITS_SIZE, PROT_READ | PROT_WRITE,
						MAP_SHARED, obs->targets_fd, 0);
			if (obs->target_bits == MAP_FAILED) {
				obs->target_bits = NULL;
				err = nbpf_err(-errno, "mapping the target table: %s", strerror(errno));
				goto fail;
			}
		}
		if (set == NBPF_OBS_SCHED && (err = obs_fill_numa(obs, s)))
			goto fail;
	}
	for (int i = 0; i < o->n_pids; i++)
		if (obs->target_bits && (err = nbpf_obs_add_pid(obs, o->pids[i])))
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
		char why[1024] = "";

		for (int set = 0; set < NBPF_OBS_NSETS; set++)
			if (obs->st[set].wanted)
				append(why, sizeof(why), "%s: %s", set_names[set], obs->st[set].error);
		err = nbpf_err(-ENOENT, "no probe set could be attached (%s)", why);
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
	bpf_link__destroy(obs->iter_all);
	free(obs->retired);
	for (int i = 0; i < obs->n_cuda; i++)
		links_destroy(&obs->cuda[i].lk);
	free(obs->cuda);
	for (int set = NBPF_OBS_NSETS - 1; set >= 0; set--)
		set_unload(&obs->sets[set]);
	if (obs->target_bits)
		munmap(obs->target_bits, TARGET_BITS_SIZE);
	if (obs->targets_fd >= 0)
		close(obs->targets_fd);
	if (obs->events_fd >= 0)
		close(obs->events_fd);
	if (obs->tier_ctl_fd >= 0)
		close(obs->tier_ctl_fd);
	if (obs->tier_bucket_fd >= 0)
		close(obs->tier_bucket_fd);
	btf__free(obs->btf);
	free(obs);
}

const struct nbpf_obs_status *nbpf_obs_status(const struct nbpf_obs *obs, int set)
{
	return set >= 0 && set < NBPF_OBS_NSETS ? &obs->st[set] : NULL;
}

/*
 * The bit of pid in the targets map.  Atomic: the CLI adds and removes
 * processes while the programs read the words, and two pids share a word.
 */
static int target_bit(struct nbpf_obs *obs, int pid, bool on)
{
	obs_u64 m;
	obs_u64 *w;

	if (pid <= 0 || (unsigned int)pid >= OBS_PID_LIMIT)
		return nbpf_err(-EINVAL, "pid %d: out of range", pid);
	w = &obs->target_bits[(unsigned int)pid / 64];
	m = 1ull << ((unsigned int)pid % 64);
	if (on)
		__atomic_fetch_or(w, m, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(w, ~m, __ATOMIC_RELEASE);
	return 0;
}

int nbpf_obs_add_pid(struct nbpf_obs *obs, int pid)
{
	int err;

	if (!obs->target_bits)
		return 0;
	if ((err = target_bit(obs, pid, true)))
		return err;
	/* A process that joins later gets its own uprobes (those of the start are in open). */
	if (obs->st[NBPF_OBS_GPU].attached && obs->libcuda[0] && obs->cfg.mode == OBS_MODE_PIDS)
		attach_cuda(obs, pid);
	return 0;
}

int nbpf_obs_del_pid(struct nbpf_obs *obs, int pid)
{
	return obs->target_bits ? target_bit(obs, pid, false) : 0;
}

int nbpf_obs_targets(struct nbpf_obs *obs, int *pids, int max)
{
	int n = 0;

	for (size_t w = 0; obs->target_bits && w < OBS_PID_WORDS; w++) {
		obs_u64 bits = __atomic_load_n(&obs->target_bits[w], __ATOMIC_ACQUIRE);

		for (; bits; bits &= bits - 1, n++)
			if (n < max)
				pids[n] = (int)(w * 64 + (size_t)__builtin_ctzll(bits));
	}
	return n;
}

/* ---- the net set's socket scan ------------------------------------------------ */

/* Runs one iterator to its end: the program's work is done as it is read. */
static int iter_run(struct bpf_link *l)
{
	char buf[64];
	int fd = bpf_iter_create(bpf_link__fd(l)), n;

	if (fd < 0)
		return -errno;
	while ((n = (int)read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/*
 * One pass over the target processes' open files.  Where the kernel can
 * filter a task iterator by process (6.1), each target pid gets its own
 * short-lived iterator, so the scan costs the job's descriptors only;
 * cgroup and comm targets (or older kernels) take one pass over every
 * process, the program returning at the target check for the others.
 */
int nbpf_obs_net_scan(struct nbpf_obs *obs)
{
	struct bpf_object *obj = nbpf_obs__obj(obs, NBPF_OBS_NET);
	struct bpf_program *p = obj ? bpf_object__find_program_by_name(obj, "net_iter") : NULL;
	int err = 0;

	if (!p)
		return 0;
	if (obs->cfg.mode == OBS_MODE_PIDS && !obs->iter_no_pid && obs->target_bits) {
		for (size_t w = 0; w < OBS_PID_WORDS && !err; w++) {
			obs_u64 bits = __atomic_load_n(&obs->target_bits[w], __ATOMIC_ACQUIRE);

			while (bits) {
				union bpf_iter_link_info li = { .task.pid = (__u32)(w * 64 + __builtin_ctzll(bits)) };
				LIBBPF_OPTS(bpf_iter_attach_opts, io, .link_info = &li, .link_info_len = sizeof(li));
				struct bpf_link *l = bpf_program__attach_iter(p, &io);

				bits &= bits - 1;
				if (!l && errno == EINVAL) {
					obs->iter_no_pid = true; /* before 6.1: one pass over everyone */
					break;
				}
				if (!l)
					continue; /* the process is gone */
				err = iter_run(l);
				bpf_link__destroy(l);
			}
			if (obs->iter_no_pid)
				break;
		}
		if (!obs->iter_no_pid)
			return err ? nbpf_err(err, "scanning the job's sockets: %s", strerror(-err)) : 0;
	}
	if (!obs->iter_all && !(obs->iter_all = bpf_program__attach_iter(p, NULL)))
		return nbpf_err(-errno, "socket iterator: %s", strerror(errno));
	err = iter_run(obs->iter_all);
	return err ? nbpf_err(err, "scanning the job's sockets: %s", strerror(-err)) : 0;
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

uint64_t nbpf_obs__untracked(struct nbpf_obs *obs)
{
	struct obs_io *io = obs->sets[NBPF_OBS_IO].skel;

	/* lost is set once the set is loaded, and its .bss mapped. */
	if (!obs->sets[NBPF_OBS_IO].lost)
		return 0;
	return *(volatile obs_u64 *)&io->bss->infl_full + *(volatile obs_u64 *)&io->bss->io_index_full;
}

int nbpf_obs_deep(struct nbpf_obs *obs, uint64_t until_ns, uint64_t per_s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct obs_tier_ctl c = { .until_ns = until_ns };
	__u32 z = 0;

	if (obs->tier_ctl_fd < 0)
		return nbpf_err(-ENOENT, "no probe set loaded");
	if (!(obs->cfg.flags & OBS_CFG_DEEP))
		return nbpf_err(-EOPNOTSUPP, "deep tier: not asked for when the probes were loaded "
				"(nbpf_obs_opts.deep)");
	if (ncpu <= 0)
		ncpu = 1;
	/* Split evenly; a budget below one per CPU still lets each CPU send one a second. */
	c.per_cpu_per_s = per_s ? (per_s + (uint64_t)ncpu - 1) / (uint64_t)ncpu : 0;
	if (bpf_map_update_elem(obs->tier_ctl_fd, &z, &c, BPF_ANY))
		return nbpf_err(-errno, "deep tier: %s", strerror(errno));
	return 0;
}

int nbpf_obs_deep_stats(struct nbpf_obs *obs, uint64_t *sent, uint64_t *dropped)
{
	int ncpu = libbpf_num_possible_cpus();
	struct obs_tier_bucket *b;
	__u32 z = 0;

	*sent = *dropped = 0;
	if (obs->tier_bucket_fd < 0 || ncpu <= 0)
		return nbpf_err(-ENOENT, "no probe set loaded");
	b = calloc((size_t)ncpu, sizeof(*b));
	if (!b)
		return nbpf_err(-ENOMEM, "out of memory");
	if (bpf_map_lookup_elem(obs->tier_bucket_fd, &z, b)) {
		free(b);
		return nbpf_err(-errno, "deep tier: %s", strerror(errno));
	}
	for (int i = 0; i < ncpu; i++) {
		*sent += b[i].sent;
		*dropped += b[i].dropped;
	}
	free(b);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_observe.c - `ncclbpf observe [--pid P | --cgroup PATH | --comm NAME]
 * [--probes io,net,sched,gpu] [--duration S] [--interval MS] [-j]`: the
 * kernel's view of the job (src/observe) beside the plugin's collective
 * telemetry, per process, every interval.
 *
 * With no target it watches every process running the plugin, found
 * through the control sockets like `ps`; as root it also finds other
 * users' jobs and talks to each socket under its owner's uid, since the
 * plugin serves only its own user.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"
#include "ncclbpf/runtime.h"

static const char usage_text[] =
	"usage: ncclbpf observe [--pid PID | --cgroup PATH | --comm NAME]\n"
	"                       [--probes io,net,sched,gpu] [--duration SECONDS] [--interval MS]\n"
	"                       [--outlier MS] [--btf FILE] [-j]\n"
	"\n"
	"Kernel-side signals of a training job, aggregated in the kernel by eBPF programs,\n"
	"beside the collective P99 of processes running the ncclbpf plugin.\n"
	"  --pid PID       one process (all its threads)\n"
	"  --cgroup PATH   every process in a cgroup v2 directory or below it\n"
	"  --comm NAME     every process with this name\n"
	"                  (none of these: every process running the plugin, with its ranks)\n"
	"  --probes LIST   io, net, sched, gpu (default: all; named sets must attach fully)\n"
	"  --duration S    stop after S seconds (default: until interrupted)\n"
	"  --interval MS   table period (default 1000)\n"
	"  --outlier MS    latencies above this are listed one by one (default 10)\n"
	"  --btf FILE      BTF for CO-RE instead of /sys/kernel/btf/vmlinux\n"
	"Needs root, or CAP_BPF and CAP_PERFMON.\n";

#ifndef NCCLBPF_HAVE_OBSERVE
int cmd_observe(struct cli *c, int argc, char **argv)
{
	(void)c;
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return CLI_OK;
		}
	fprintf(stderr, "ncclbpf: observe: this build has no kernel probes (bpftool or kernel BTF "
			"were missing when it was built)\n");
	return CLI_NO;
}
#else
#include "observe.h"

/* A process being watched: its labels and its plugin telemetry, if it runs the plugin. */
struct proc {
	int pid;
	uid_t uid;
	char comm[32];
	char sock[4200];      /* control socket, "" when not a plugin process */
	char ranks[256];      /* "0/8@0x1234...,..." */
	struct nbpf_tele_set tele_prev;
	bool tele_seen;
	double nccl_p99_ns;
	uint64_t nccl_calls;
	char prom_labels[320];
};

struct obs_state {
	struct cli *cli;
	struct proc *procs;
	size_t n_procs;
	bool auto_mode;
	/* Outliers of the current interval. */
	struct obs_event ev[64];
	size_t n_ev;
	uint64_t ev_dropped;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void read_comm(int pid, char *out, size_t n)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	out[0] = 0;
	f = fopen(p, "r");
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
	if (!out[0])
		snprintf(out, n, "?");
}

static struct proc *proc_find(struct obs_state *s, int pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static struct proc *proc_add(struct obs_state *s, int pid)
{
	struct proc *p = proc_find(s, pid), *np;

	if (p)
		return p;
	np = realloc(s->procs, (s->n_procs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	s->procs = np;
	p = &s->procs[s->n_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	read_comm(pid, p->comm, sizeof(p->comm));
	return p;
}

/*
 * One exchange with a plugin process.  Root talks to another user's job
 * under that user's uid: the plugin checks SO_PEERCRED, taken at connect.
 */
static int proc_call(struct proc *p, int type, struct nbpf_ctl_msg *m)
{
	uid_t me = geteuid();
	const char *em;
	int err;

	if (me == 0 && p->uid != 0 && seteuid(p->uid))
		return -errno;
	err = nbpf_ctl_call_path(p->sock, type, NULL, m, &em);
	if (me == 0 && p->uid != 0 && seteuid(0))
		err = -errno;
	return err;
}

/* Ranks and communicators, from the process's PS answer. */
static void proc_labels(struct proc *p)
{
	struct nbpf_ctl_msg m;
	size_t k = 0;

	p->ranks[0] = 0;
	if (!p->sock[0] || proc_call(p, NBPF_CTL_PS, &m)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	for (uint32_t i = 0; i < m.n_recs && k < sizeof(p->ranks) - 64; i++) {
		const struct nbpf_ctl_rec *r = &m.recs[i];
		const char *rank = nbpf_ctl_rec_get(r, "rank"), *ranks = nbpf_ctl_rec_get(r, "ranks");
		const char *id = nbpf_ctl_rec_get(r, "comm_id");

		if (strcmp(r->kind, "comm") || !rank || !ranks || !id)
			continue;
		k += (size_t)snprintf(p->ranks + k, sizeof(p->ranks) - k, "%s%s/%s@%s", k ? "," : "",
				      rank, ranks, id);
	}
	nbpf_ctl_msg_free(&m);
}

static void add_socket(struct obs_state *s, const char *path, int pid, uid_t uid)
{
	struct proc *p;

	if (kill(pid, 0) && errno == ESRCH)
		return;
	if (proc_find(s, pid) || !(p = proc_add(s, pid)))
		return;
	snprintf(p->sock, sizeof(p->sock), "%s", path);
	p->uid = uid;
	proc_labels(p);
}

/* Every plugin process: ours, and as root every user's runtime directory too. */
static void discover(struct obs_state *s)
{
	static const char *const pats[] = { "/run/user/*/ncclbpf/*.sock", "/tmp/ncclbpf-*/*.sock" };
	char dir[4096], path[4200];
	int *pids = NULL, n = nbpf_ctl_list_pids(&pids);

	if (n > 0 && !nbpf_ctl_runtime_dir(dir, sizeof(dir), false))
		for (int i = 0; i < n; i++)
			if (!nbpf_ctl_sock_path(path, sizeof(path), dir, pids[i]))
				add_socket(s, path, pids[i], geteuid());
	free(pids);
	if (geteuid() != 0 || getenv("NCCLBPF_CTL_DIR"))
		return;
	for (size_t k = 0; k < 2; k++) {
		glob_t g;

		if (glob(pats[k], 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *base = strrchr(g.gl_pathv[i], '/') + 1;
			struct stat sb;
			char *end;
			long pid = strtol(base, &end, 10);

			/* The socket's owner is the job's user; anything else is not ours to trust. */
			if (pid > 0 && !strcmp(end, ".sock") && !lstat(g.gl_pathv[i], &sb) &&
			    S_ISSOCK(sb.st_mode))
				add_socket(s, g.gl_pathv[i], (int)pid, sb.st_uid);
		}
		globfree(&g);
	}
}

/* Collective P99 and calls of one process over the last interval. */
static void proc_nccl(struct proc *p)
{
	struct nbpf_tele_set now = { 0 }, d = { 0 };
	uint64_t hist[NBPF_LAT_BUCKETS] = { 0 };
	struct nbpf_ctl_msg m;

	p->nccl_p99_ns = 0;
	p->nccl_calls = 0;
	if (!p->sock[0])
		return;
	if (proc_call(p, NBPF_CTL_TELEMETRY, &m)) {
		nbpf_ctl_msg_free(&m);
		return;
	}
	cli_tele_merge(&now, &m);
	nbpf_ctl_msg_free(&m);
	if (!cli_tele_delta(&d, &now, p->tele_seen ? &p->tele_prev : NULL)) {
		for (size_t i = 0; i < d.n_cells; i++) {
			p->nccl_calls += d.cells[i].count;
			for (int b = 0; b < NBPF_LAT_BUCKETS; b++)
				hist[b] += d.cells[i].hist[b];
		}
		p->nccl_p99_ns = nbpf_tele_quantile_ns(hist, NBPF_LAT_BUCKETS, 0.99);
	}
	nbpf_tele_free(&d);
	nbpf_tele_free(&p->tele_prev);
	p->tele_prev = now;
	p->tele_seen = true;
}

/* ---- output ----------------------------------------------------------------- */

static void fmt_ns(char *out, size_t n, double ns)
{
	if (ns <= 0)
		snprintf(out, n, "-");
	else if (ns < 1e3)
		snprintf(out, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(out, n, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(out, n, "%.2fms", ns / 1e6);
	else
		snprintf(out, n, "%.2fs", ns / 1e9);
}

static void fmt_bytes(char *out, size_t n, double b)
{
	static const char u[] = "BKMGT";
	int i = 0;

	while (b >= 1024 && i < 4)
		b /= 1024, i++;
	snprintf(out, n, i ? "%.1f%c" : "%.0f%c", b, u[i]);
}

static const char *op_name(uint32_t op)
{
	return op == OBS_OP_READ ? "read" : op == OBS_OP_WRITE ? "write" : "other";
}

static const char *ev_name(uint32_t k)
{
	static const char *const n[] = { "?", "block", "io_uring", "runq", "offcpu", "retransmit",
					 "cuda-sync", "nvidia-ioctl" };

	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "?";
}

void nbpf_obs_peer_str(const struct obs_conn *c, char *out, size_t n, bool port);

/* What an outlier is about, as JSON members (",\"device\":...") or as words. */
static void outlier_detail(const struct obs_event *e, char *out, size_t n, bool json)
{
	struct obs_conn c = { .family = 2 /* AF_INET */, .dport = (uint16_t)e->a };
	char peer[64];

	out[0] = 0;
	switch (e->kind) {
	case OBS_EV_BLOCK:
		snprintf(out, n, json ? ",\"device\":\"%u:%u\",\"bytes\":%" PRIu64 : "device %u:%u %" PRIu64 " bytes",
			 (unsigned)(e->a >> 20), (unsigned)(e->a & 0xfffff), e->b);
		break;
	case OBS_EV_URING:
		snprintf(out, n, json ? ",\"opcode\":%" PRIu64 : "opcode %" PRIu64, e->a);
		break;
	case OBS_EV_RETRANS:
		memcpy(c.daddr, &e->b, 4); /* IPv4 peers only; IPv6 ones show 0.0.0.0 */
		nbpf_obs_peer_str(&c, peer, sizeof(peer), true);
		snprintf(out, n, json ? ",\"peer\":\"%s\"" : "to %s", peer);
		break;
	default:
		break;
	}
}

static void print_status(struct nbpf_obs *obs, FILE *f)
{
	for (int set = 0; set < NBPF_OBS_NSETS; set++) {
		const struct nbpf_obs_status *st = nbpf_obs_status(obs, set);

		if (!st->wanted)
			continue;
		if (!st->attached)
			fprintf(f, "ncclbpf: observe: %s: not attached: %s\n", nbpf_obs_set_name(set),
				st->error);
		else if (st->missing[0])
			fprintf(f, "ncclbpf: observe: %s: attached without %s\n", nbpf_obs_set_name(set),
				st->missing);
		if (st->attached && st->via[0])
			fprintf(f, "ncclbpf: observe: %s: %s\n", nbpf_obs_set_name(set), st->via);
	}
}

/*
 * Request sizes are mostly powers of two, the lower bounds of their
 * buckets: a size quantile is reported as its bucket's bound (4096, not
 * the 6144 that interpolation inside [4096, 8192) would give).
 */
static double size_q(const struct obs_hist *h, double q)
{
	double v = nbpf_obs_hist_quantile(h, q);

	return v >= 1 ? ldexp(1, ilogb(v)) : v;
}

static void json_hist(FILE *f, const char *name, const struct obs_hist *h)
{
	fprintf(f, "\"%s\":{\"count\":%" PRIu64 ",\"sum\":%" PRIu64 ",\"p50\":%.0f,\"p99\":%.0f}", name,
		h->count, h->sum, nbpf_obs_hist_quantile(h, 0.5), nbpf_obs_hist_quantile(h, 0.99));
}

static void json_size_hist(FILE *f, const char *name, const struct obs_hist *h)
{
	fprintf(f, "\"%s\":{\"count\":%" PRIu64 ",\"sum\":%" PRIu64 ",\"p50\":%.0f,\"p99\":%.0f}", name,
		h->count, h->sum, size_q(h, 0.5), size_q(h, 0.99));
}

static void print_json(struct obs_state *s, struct nbpf_obs *obs, const struct nbpf_obs_snap *d,
		       double secs, int iter)
{
	FILE *f = stdout;
	char peer[80];

	fprintf(f, "{\"sample\":%d,\"interval_s\":%.3f,\"probes\":{", iter, secs);
	for (int set = 0, n = 0; set < NBPF_OBS_NSETS; set++) {
		const struct nbpf_obs_status *st = nbpf_obs_status(obs, set);

		if (!st->wanted)
			continue;
		fprintf(f, "%s\"%s\":{\"attached\":%s,\"missing\":", n++ ? "," : "",
			nbpf_obs_set_name(set), st->attached ? "true" : "false");
		cli_json_str(f, st->attached ? st->missing : st->error);
		fprintf(f, ",\"via\":");
		cli_json_str(f, st->via);
		fputc('}', f);
	}
	fprintf(f, "},\"events_lost\":%" PRIu64 ",\"processes\":[", d->events_lost);
	for (size_t i = 0; i < s->n_procs; i++) {
		const struct proc *p = &s->procs[i];
		uint32_t tgid = (uint32_t)p->pid;
		int n = 0;

		fprintf(f, "%s{\"pid\":%d,\"comm\":", i ? "," : "", p->pid);
		cli_json_str(f, p->comm);
		fprintf(f, ",\"ranks\":");
		cli_json_str(f, p->ranks);
		fprintf(f, ",\"nccl\":{\"calls\":%" PRIu64 ",\"p99_ns\":%.0f},\"block\":[", p->nccl_calls,
			p->nccl_p99_ns);
		for (size_t k = 0; k < d->n_blk; k++) {
			const struct nbpf_obs_blk *b = &d->blk[k];

			if (b->k.tgid != tgid || !b->v.lat.count)
				continue;
			fprintf(f, "%s{\"device\":\"%u:%u\",\"op\":\"%s\",", n++ ? "," : "", b->k.dev >> 20,
				b->k.dev & 0xfffff, op_name(b->k.op));
			json_hist(f, "latency_ns", &b->v.lat);
			fputc(',', f);
			json_size_hist(f, "size_bytes", &b->v.size);
			fputc(',', f);
			json_size_hist(f, "alignment_bytes", &b->v.align);
			fprintf(f, ",\"small\":%" PRIu64 ",\"unaligned\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
				b->v.small, b->v.unaligned, b->v.errors);
		}
		fprintf(f, "],\"io_uring\":[");
		n = 0;
		for (size_t k = 0; k < d->n_uring; k++) {
			if (d->uring[k].k.tgid != tgid || !d->uring[k].v.count)
				continue;
			fprintf(f, "%s{\"opcode\":%u,", n++ ? "," : "", d->uring[k].k.opcode);
			json_hist(f, "latency_ns", &d->uring[k].v);
			fputc('}', f);
		}
		fprintf(f, "],\"page_cache\":{");
		for (size_t k = 0; k < d->n_pcache; k++)
			if (d->pcache[k].tgid == tgid)
				fprintf(f, "\"lookup_pages\":%" PRIu64 ",\"miss_pages\":%" PRIu64,
					d->pcache[k].v.accessed, d->pcache[k].v.added);
		fprintf(f, "},\"tcp\":[");
		n = 0;
		for (size_t k = 0; k < d->n_conn; k++) {
			const struct obs_conn *c = &d->conn[k].v;

			if (c->tgid != tgid)
				continue;
			nbpf_obs_peer_str(c, peer, sizeof(peer), true);
			fprintf(f, "%s{\"peer\":\"%s\",\"local_port\":%u,\"bytes_sent\":%" PRIu64
				   ",\"bytes_recv\":%" PRIu64 ",\"retransmits\":%" PRIu64
				   ",\"srtt_us\":%u,\"srtt_min_us\":%u,\"srtt_max_us\":%u}",
				n++ ? "," : "", peer, c->sport, c->bytes_sent, c->bytes_recv, c->retrans,
				c->srtt_us, c->srtt_min_us == ~0u ? 0 : c->srtt_min_us, c->srtt_max_us);
		}
		fprintf(f, "]");
		for (size_t k = 0; k < d->n_sched; k++) {
			const struct obs_sched_val *v = &d->sched[k].v;

			if (d->sched[k].tgid != tgid)
				continue;
			fprintf(f, ",\"sched\":{");
			json_hist(f, "runq_ns", &v->runq);
			fputc(',', f);
			json_hist(f, "offcpu_ns", &v->offcpu);
			fprintf(f, ",\"migrations\":%" PRIu64 ",\"cross_node\":%" PRIu64 "}", v->migrations,
				v->cross_node);
		}
		for (size_t k = 0; k < d->n_gpu; k++) {
			const struct obs_gpu_val *v = &d->gpu[k].v;

			if (d->gpu[k].tgid != tgid)
				continue;
			fprintf(f, ",\"gpu\":{\"launches\":%" PRIu64 ",", v->launches);
			json_hist(f, "sync_ns", &v->sync);
			fputc(',', f);
			json_hist(f, "copy_ns", &v->copy);
			fputc(',', f);
			json_hist(f, "ioctl_ns", &v->ioctl);
			fputc('}', f);
		}
		fputc('}', f);
	}
	fprintf(f, "],\"outliers\":[");
	for (size_t i = 0; i < s->n_ev; i++) {
		const struct obs_event *e = &s->ev[i];

		char what[96];

		outlier_detail(e, what, sizeof(what), true);
		fprintf(f, "%s{\"kind\":\"%s\",\"pid\":%u,\"tid\":%u,\"value_ns\":%" PRIu64 "%s}",
			i ? "," : "", ev_name(e->kind), e->tgid, e->tid, e->value_ns, what);
	}
	fprintf(f, "]}\n");
	fflush(f);
}

static void print_table(struct obs_state *s, const struct nbpf_obs_snap *d, double secs, int iter)
{
	char a[24], b[24], c2[24], e[24], g[24], h[24];

	printf("\nncclbpf observe  %zu process%s  last %.3g s  sample %d\n", s->n_procs,
	       s->n_procs == 1 ? "" : "es", secs, iter);
	printf("%-8s %-15s %9s %8s %9s %9s %9s %9s %6s %9s %9s %6s %7s %9s\n", "PID", "COMM",
	       "NCCL_P99", "BLK_IOPS", "BLK_P99", "URING_P99", "TX/s", "RX/s", "RETX", "RUNQ_P99",
	       "OFFCPU_P99", "MIGR", "XNUMA", "SYNC_P99");
	for (size_t i = 0; i < s->n_procs; i++) {
		struct proc *p = &s->procs[i];
		struct obs_hist bl = { 0 }, ur = { 0 }, rq = { 0 }, off = { 0 }, sy = { 0 };
		uint64_t tx = 0, rx = 0, rt = 0, mig = 0, xn = 0;
		uint32_t tgid = (uint32_t)p->pid;

#define MERGE(dst, src) do { for (int z = 0; z < OBS_HIST_SLOTS; z++) (dst).slot[z] += (src).slot[z]; (dst).count += (src).count; } while (0)
		for (size_t k = 0; k < d->n_blk; k++)
			if (d->blk[k].k.tgid == tgid)
				MERGE(bl, d->blk[k].v.lat);
		for (size_t k = 0; k < d->n_uring; k++)
			if (d->uring[k].k.tgid == tgid)
				MERGE(ur, d->uring[k].v);
		for (size_t k = 0; k < d->n_conn; k++)
			if (d->conn[k].v.tgid == tgid) {
				tx += d->conn[k].v.bytes_sent;
				rx += d->conn[k].v.bytes_recv;
				rt += d->conn[k].v.retrans;
			}
		for (size_t k = 0; k < d->n_sched; k++)
			if (d->sched[k].tgid == tgid) {
				MERGE(rq, d->sched[k].v.runq);
				MERGE(off, d->sched[k].v.offcpu);
				mig += d->sched[k].v.migrations;
				xn += d->sched[k].v.cross_node;
			}
		for (size_t k = 0; k < d->n_gpu; k++)
			if (d->gpu[k].tgid == tgid)
				MERGE(sy, d->gpu[k].v.sync);
#undef MERGE
		fmt_ns(a, sizeof(a), p->nccl_p99_ns);
		fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&bl, 0.99));
		fmt_ns(c2, sizeof(c2), nbpf_obs_hist_quantile(&ur, 0.99));
		fmt_bytes(e, sizeof(e), (double)tx / secs);
		fmt_bytes(g, sizeof(g), (double)rx / secs);
		fmt_ns(h, sizeof(h), nbpf_obs_hist_quantile(&rq, 0.99));
		printf("%-8d %-15.15s %9s %8.0f %9s %9s %9s %9s %6" PRIu64 " %9s", p->pid, p->comm, a,
		       (double)bl.count / secs, b, c2, e, g, rt, h);
		fmt_ns(h, sizeof(h), nbpf_obs_hist_quantile(&off, 0.99));
		fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&sy, 0.99));
		printf(" %9s %6" PRIu64 " %7" PRIu64 " %9s\n", h, mig, xn, a);
		if (p->ranks[0])
			printf("         ranks %s\n", p->ranks);
		for (size_t k = 0; k < d->n_blk; k++) {
			const struct nbpf_obs_blk *x = &d->blk[k];

			if (x->k.tgid != tgid || !x->v.lat.count)
				continue;
			fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&x->v.lat, 0.5));
			fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&x->v.lat, 0.99));
			fmt_bytes(e, sizeof(e), size_q(&x->v.size, 0.5));
			printf("         block %u:%u %-5s %7" PRIu64 " req  p50 %s p99 %s  size p50 %s  "
			       "small %.0f%% unaligned %.0f%%\n", x->k.dev >> 20, x->k.dev & 0xfffff,
			       op_name(x->k.op), x->v.lat.count, a, b, e,
			       100.0 * (double)x->v.small / (double)x->v.lat.count,
			       100.0 * (double)x->v.unaligned / (double)x->v.lat.count);
		}
		for (size_t k = 0; k < d->n_pcache; k++)
			if (d->pcache[k].tgid == tgid && d->pcache[k].v.accessed)
				printf("         page cache  %" PRIu64 " pages looked up, %" PRIu64
				       " added (misses)\n", d->pcache[k].v.accessed, d->pcache[k].v.added);
		for (size_t k = 0; k < d->n_conn; k++) {
			const struct obs_conn *c = &d->conn[k].v;
			char peer[80];

			if (c->tgid != tgid || !(c->bytes_sent + c->bytes_recv + c->retrans))
				continue;
			nbpf_obs_peer_str(c, peer, sizeof(peer), true);
			fmt_bytes(e, sizeof(e), (double)c->bytes_sent / secs);
			fmt_bytes(g, sizeof(g), (double)c->bytes_recv / secs);
			printf("         tcp %-22s :%-5u tx %s/s rx %s/s retrans %" PRIu64 " srtt %uus\n",
			       peer, c->sport, e, g, c->retrans, c->srtt_us);
		}
	}
	for (size_t i = 0; i < s->n_ev; i++) {
		char v[24];

		char what[96];

		fmt_ns(v, sizeof(v), (double)s->ev[i].value_ns);
		outlier_detail(&s->ev[i], what, sizeof(what), false);
		printf("outlier %-12s pid %u tid %u %s %s\n", ev_name(s->ev[i].kind), s->ev[i].tgid,
		       s->ev[i].tid, s->ev[i].kind == OBS_EV_RETRANS ? "" : v, what);
	}
	if (s->ev_dropped)
		printf("outliers not shown: %" PRIu64 "\n", s->ev_dropped);
	fflush(stdout);
}

static void on_event(void *ctx, const struct obs_event *e)
{
	struct obs_state *s = ctx;

	if (s->n_ev < sizeof(s->ev) / sizeof(s->ev[0]))
		s->ev[s->n_ev++] = *e;
	else
		s->ev_dropped++;
}

/* Processes seen in the kernel's tables (cgroup and comm modes find them there). */
static void procs_from_snap(struct obs_state *s, const struct nbpf_obs_snap *d)
{
	for (size_t i = 0; i < d->n_blk; i++)
		proc_add(s, (int)d->blk[i].k.tgid);
	for (size_t i = 0; i < d->n_uring; i++)
		proc_add(s, (int)d->uring[i].k.tgid);
	for (size_t i = 0; i < d->n_conn; i++)
		proc_add(s, (int)d->conn[i].v.tgid);
	for (size_t i = 0; i < d->n_sched; i++)
		proc_add(s, (int)d->sched[i].tgid);
	for (size_t i = 0; i < d->n_gpu; i++)
		proc_add(s, (int)d->gpu[i].tgid);
}

int cmd_observe(struct cli *c, int argc, char **argv)
{
	struct nbpf_obs_opts o = { .mode = OBS_MODE_PIDS };
	struct obs_state s = { .cli = c };
	struct nbpf_obs_snap prev = { 0 };
	struct nbpf_obs *obs = NULL;
	double duration = 0, interval_ms = 1000, t0, t_prev;
	int pid = 0, n_modes = 0, rc = CLI_OK, err, *pids = NULL;
	char *end;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return CLI_OK;
		} else if (!strcmp(a, "--pid") && v) {
			pid = cli_parse_pid(v);
			if (pid <= 0)
				return cli_usage_error("observe: '%s' is not a process id", v);
			n_modes++, i++;
		} else if (!strcmp(a, "--cgroup") && v) {
			o.mode = OBS_MODE_CGROUP, o.cgroup = v;
			n_modes++, i++;
		} else if (!strcmp(a, "--comm") && v) {
			o.mode = OBS_MODE_COMM, o.comm = v;
			n_modes++, i++;
			if (!*v || strlen(v) >= OBS_COMM_LEN)
				return cli_usage_error("observe: --comm takes 1 to 15 characters");
		} else if (!strcmp(a, "--probes") && v) {
			if (nbpf_obs_parse_sets(v, &o.probes))
				return cli_usage_error("observe: %s", ncclbpf_errmsg());
			o.strict = true;
			i++;
		} else if (!strcmp(a, "--duration") && v) {
			duration = strtod(v, &end);
			if (*end || !(duration > 0))
				return cli_usage_error("observe: --duration needs seconds > 0");
			i++;
		} else if (!strcmp(a, "--interval") && v) {
			interval_ms = strtod(v, &end);
			if (*end || !(interval_ms >= 10))
				return cli_usage_error("observe: --interval needs milliseconds >= 10");
			i++;
		} else if (!strcmp(a, "--outlier") && v) {
			double ms = strtod(v, &end);

			if (*end || !(ms > 0))
				return cli_usage_error("observe: --outlier needs milliseconds > 0");
			o.outlier_ns = (uint64_t)(ms * 1e6);
			i++;
		} else if (!strcmp(a, "--btf") && v) {
			o.btf_path = v;
			i++;
		} else {
			return cli_usage_error("observe: unknown argument '%s' (ncclbpf observe --help)", a);
		}
	}
	if (n_modes > 1)
		return cli_usage_error("observe: --pid, --cgroup and --comm exclude each other");
	nbpf_obs_opts_env(&o);
	if (pid) {
		if (kill(pid, 0) && errno == ESRCH) {
			fprintf(stderr, "ncclbpf: observe: pid %d: no such process\n", pid);
			return CLI_NO;
		}
		proc_add(&s, pid);
	} else if (!n_modes) {
		s.auto_mode = true;
		discover(&s);
		if (!s.n_procs) {
			fprintf(stderr, "ncclbpf: observe: no process runs the ncclbpf plugin (see `ncclbpf "
					"ps`); name one with --pid, --cgroup or --comm\n");
			return CLI_NO;
		}
	}
	if (s.n_procs) {
		pids = calloc(s.n_procs, sizeof(*pids));
		if (!pids)
			return CLI_NO;
		for (size_t i = 0; i < s.n_procs; i++)
			pids[i] = s.procs[i].pid;
		o.pids = pids;
		o.n_pids = (int)s.n_procs;
	}
	err = nbpf_obs_open(&o, &obs);
	free(pids);
	if (err) {
		fprintf(stderr, "ncclbpf: observe: %s\n", ncclbpf_errmsg());
		rc = CLI_NO;
		goto out;
	}
	print_status(obs, stderr);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = t_prev = mono_s();
	for (int iter = 1; !stop_flag; iter++) {
		double deadline = t_prev + interval_ms / 1000, now, secs;
		struct nbpf_obs_snap snap, d;

		if (duration && deadline > t0 + duration)
			deadline = t0 + duration;
		s.n_ev = 0;
		s.ev_dropped = 0;
		/* Outliers arrive while we wait for the end of the interval. */
		while (!stop_flag && (now = mono_s()) < deadline) {
			int ms = (int)((deadline - now) * 1000) + 1;

			if (nbpf_obs_poll(obs, ms > 100 ? 100 : ms, on_event, &s) < 0)
				break;
		}
		now = mono_s();
		secs = now - t_prev;
		t_prev = now;
		if ((err = nbpf_obs_snapshot(obs, &snap))) {
			fprintf(stderr, "ncclbpf: observe: %s\n", ncclbpf_errmsg());
			rc = CLI_NO;
			break;
		}
		if ((err = nbpf_obs_snap_delta(&d, &snap, iter == 1 ? NULL : &prev))) {
			nbpf_obs_snap_free(&snap);
			rc = CLI_NO;
			break;
		}
		nbpf_obs_snap_free(&prev);
		prev = snap;
		if (s.auto_mode) {
			size_t before;

			/* Jobs that ended leave the table and the kernel's target set. */
			for (size_t i = 0; i < s.n_procs;) {
				if (kill(s.procs[i].pid, 0) && errno == ESRCH) {
					nbpf_obs_del_pid(obs, s.procs[i].pid);
					nbpf_tele_free(&s.procs[i].tele_prev);
					s.procs[i] = s.procs[--s.n_procs];
				} else {
					i++;
				}
			}
			before = s.n_procs;

			/* Jobs that started meanwhile join the target table. */
			discover(&s);
			for (size_t i = before; i < s.n_procs; i++)
				nbpf_obs_add_pid(obs, s.procs[i].pid);
		}
		if (o.mode != OBS_MODE_PIDS)
			procs_from_snap(&s, &d);
		for (size_t i = 0; i < s.n_procs; i++)
			proc_nccl(&s.procs[i]);
		if (c->json)
			print_json(&s, obs, &d, secs, iter);
		else
			print_table(&s, &d, secs, iter);
		nbpf_obs_snap_free(&d);
		if (duration && now - t0 >= duration - 1e-3)
			break;
	}
out:
	nbpf_obs_snap_free(&prev);
	nbpf_obs_close(obs);
	for (size_t i = 0; i < s.n_procs; i++)
		nbpf_tele_free(&s.procs[i].tele_prev);
	free(s.procs);
	return rc;
}
#endif

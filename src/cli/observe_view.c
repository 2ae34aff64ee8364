// SPDX-License-Identifier: Apache-2.0
/*
 * observe_view.c - what `ncclbpf observe` prints: per process, the kernel's
 * signals beside the collective P99, as a live table or one JSON document
 * per interval.
 */
#ifdef NCCLBPF_HAVE_OBSERVE
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cli.h"
#include "observe_cli.h"

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

static const char *uring_op(uint32_t op);

const char *obs_event_kind_name(uint32_t k)
{
	static const char *const n[] = { "?", "block", "io_uring", "runq", "offcpu", "retransmit",
					 "cuda-sync", "nvidia-ioctl", "numa-migrate" };

	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "?";
}

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
		snprintf(out, n, json ? ",\"opcode\":%" PRIu64 ",\"op\":\"%s\"" : "opcode %" PRIu64 " %s", e->a,
			 uring_op((uint32_t)e->a));
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

void obs_print_status(struct nbpf_obs *obs, FILE *f)
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

/* io_uring opcode by the kernel's name, its number where the kernel has none. */
static const char *uring_op(uint32_t op)
{
	static char num[16];
	const char *n = nbpf_obs_uring_op_name(op);

	if (n)
		return n;
	snprintf(num, sizeof(num), "%u", op);
	return num;
}

/* Share of the interval's CPU time per NUMA node, and resident memory per node. */
static void json_numa(FILE *f, const struct proc *p, const struct obs_sched_val *v)
{
	uint64_t total = 0;

	for (int i = 0; i < OBS_NUMA_NODES; i++)
		total += v->node_ns[i];
	fprintf(f, ",\"numa\":{\"cpu_ns\":[");
	for (int i = 0; i < OBS_NUMA_NODES; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", v->node_ns[i]);
	fprintf(f, "],\"cpu_share\":[");
	for (int i = 0; i < OBS_NUMA_NODES; i++)
		fprintf(f, "%s%.4f", i ? "," : "", total ? (double)v->node_ns[i] / (double)total : 0.0);
	fprintf(f, "],\"memory_bytes\":[");
	for (int i = 0; i < p->mem_nodes; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", p->mem[i]);
	fprintf(f, "]}");
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

void obs_print_json(struct obs_state *s, struct nbpf_obs *obs, const struct nbpf_obs_snap *d,
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
	fprintf(f, "},\"events_lost\":%" PRIu64 ",\"untracked\":%" PRIu64 ",\"processes\":[", d->events_lost,
		d->untracked);
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

			if (b->k.tgid != tgid || !b->v.size.count)
				continue;
			fprintf(f, "%s{\"device\":\"%u:%u\",\"op\":\"%s\",\"requests\":%" PRIu64
				",\"unseen\":%" PRIu64 ",", n++ ? "," : "", b->k.dev >> 20, b->k.dev & 0xfffff,
				op_name(b->k.op), b->v.size.count, b->v.unseen);
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
			fprintf(f, "%s{\"opcode\":%u,\"op\":", n++ ? "," : "", d->uring[k].k.opcode);
			cli_json_str(f, uring_op(d->uring[k].k.opcode));
			fputc(',', f);
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
				   ",\"srtt_us\":%u,\"min_rtt_us\":%u,\"closed\":%s}",
				n++ ? "," : "", peer, c->sport, c->bytes_sent, c->bytes_recv, c->retrans,
				c->srtt_us, c->min_rtt_us, c->closed ? "true" : "false");
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
			fprintf(f, ",\"migrations\":%" PRIu64 ",\"cross_node\":%" PRIu64, v->migrations,
				v->cross_node);
			json_numa(f, p, v);
			fputc('}', f);
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
			fputc(',', f);
			json_hist(f, "launch_gap_ns", &v->launch_gap);
			fputc(',', f);
			json_hist(f, "sync_gap_ns", &v->sync_gap);
			fputc('}', f);
		}
		fputc('}', f);
	}
	fprintf(f, "],\"exited\":[");
	for (size_t i = 0; i < s->n_exited; i++)
		fprintf(f, "%s%d", i ? "," : "", s->exited[i]);
	fprintf(f, "],\"outliers\":[");
	for (size_t i = 0; i < s->n_ev; i++) {
		const struct obs_event *e = &s->ev[i];

		char what[96];

		outlier_detail(e, what, sizeof(what), true);
		fprintf(f, "%s{\"kind\":\"%s\",\"pid\":%u,\"tid\":%u,\"value_ns\":%" PRIu64 "%s}",
			i ? "," : "", obs_event_kind_name(e->kind), e->tgid, e->tid, e->value_ns, what);
	}
	fprintf(f, "]");
	if (s->repin) {
		const struct nbpf_repin_stats *st = nbpf_repin_stats(s->repin);

		/* Cumulative, like the Prometheus counters. */
		fprintf(f, ",\"repin\":{\"threads\":%" PRIu64 ",\"moved\":%" PRIu64
			",\"pinned_elsewhere\":%" PRIu64 ",\"over_budget\":%" PRIu64
			",\"failed\":%" PRIu64 "}", st->tracked, st->moved, st->pinned, st->limited,
			st->failed);
	}
	if (s->deep) {
		uint64_t sent = 0, dropped = 0;

		nbpf_obs_deep_stats(obs, &sent, &dropped);
		fprintf(f, ",\"deep\":{\"on\":%s,\"sent\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
			s->deep_on ? "true" : "false", sent, dropped);
	}
	fprintf(f, "}\n");
	fflush(f);
}

void obs_print_table(struct obs_state *s, const struct nbpf_obs_snap *d, double secs, int iter)
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
		cli_fmt_ns(a, sizeof(a), p->nccl_p99_ns);
		cli_fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&bl, 0.99));
		cli_fmt_ns(c2, sizeof(c2), nbpf_obs_hist_quantile(&ur, 0.99));
		fmt_bytes(e, sizeof(e), (double)tx / secs);
		fmt_bytes(g, sizeof(g), (double)rx / secs);
		cli_fmt_ns(h, sizeof(h), nbpf_obs_hist_quantile(&rq, 0.99));
		printf("%-8d %-15.15s %9s %8.0f %9s %9s %9s %9s %6" PRIu64 " %9s", p->pid, p->comm, a,
		       (double)bl.count / secs, b, c2, e, g, rt, h);
		cli_fmt_ns(h, sizeof(h), nbpf_obs_hist_quantile(&off, 0.99));
		cli_fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&sy, 0.99));
		printf(" %9s %6" PRIu64 " %7" PRIu64 " %9s\n", h, mig, xn, a);
		if (p->ranks[0])
			printf("         ranks %s\n", p->ranks);
		for (size_t k = 0; k < d->n_blk; k++) {
			const struct nbpf_obs_blk *x = &d->blk[k];

			if (x->k.tgid != tgid || !x->v.size.count)
				continue;
			cli_fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&x->v.lat, 0.5));
			cli_fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&x->v.lat, 0.99));
			fmt_bytes(e, sizeof(e), size_q(&x->v.size, 0.5));
			/* Shares of the timed requests: an unseen completion has a size only. */
			printf("         block %u:%u %-5s %7" PRIu64 " req  p50 %s p99 %s  size p50 %s  "
			       "small %.0f%% unaligned %.0f%%", x->k.dev >> 20, x->k.dev & 0xfffff,
			       op_name(x->k.op), x->v.size.count, a, b, e,
			       x->v.lat.count ? 100.0 * (double)x->v.small / (double)x->v.lat.count : 0.0,
			       x->v.lat.count ? 100.0 * (double)x->v.unaligned / (double)x->v.lat.count : 0.0);
			if (x->v.unseen)
				printf("  (%" PRIu64 " completions unseen)", x->v.unseen);
			putchar('\n');
		}
		for (size_t k = 0; k < d->n_uring; k++) {
			const struct nbpf_obs_uring *u = &d->uring[k];

			if (u->k.tgid != tgid || !u->v.count)
				continue;
			cli_fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&u->v, 0.5));
			cli_fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&u->v, 0.99));
			printf("         io_uring %-14s %7" PRIu64 " req  p50 %s p99 %s\n", uring_op(u->k.opcode),
			       u->v.count, a, b);
		}
		for (size_t k = 0; k < d->n_gpu; k++) {
			const struct obs_gpu_val *v = &d->gpu[k].v;

			if (d->gpu[k].tgid != tgid || !v->launches)
				continue;
			cli_fmt_ns(a, sizeof(a), nbpf_obs_hist_quantile(&v->launch_gap, 0.5));
			cli_fmt_ns(b, sizeof(b), nbpf_obs_hist_quantile(&v->launch_gap, 0.99));
			cli_fmt_ns(e, sizeof(e), nbpf_obs_hist_quantile(&v->sync_gap, 0.5));
			cli_fmt_ns(g, sizeof(g), nbpf_obs_hist_quantile(&v->sync_gap, 0.99));
			printf("         gpu %" PRIu64 " launches  gap p50 %s p99 %s  sync to launch p50 %s p99 %s\n",
			       v->launches, a, b, e, g);
		}
		for (size_t k = 0; k < d->n_sched; k++) {
			const struct obs_sched_val *v = &d->sched[k].v;
			uint64_t total = 0;

			if (d->sched[k].tgid != tgid)
				continue;
			for (int z = 0; z < OBS_NUMA_NODES; z++)
				total += v->node_ns[z];
			if (!total && p->mem_nodes <= 0)
				continue;
			printf("         numa cpu");
			for (int z = 0; z < OBS_NUMA_NODES; z++)
				if (v->node_ns[z])
					printf(" node%d %.0f%%", z, 100.0 * (double)v->node_ns[z] / (double)total);
			printf("  memory");
			for (int z = 0; z < p->mem_nodes; z++) {
				fmt_bytes(e, sizeof(e), (double)p->mem[z]);
				printf(" node%d %s", z, e);
			}
			printf("\n");
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
			printf("         tcp %-22s :%-5u tx %s/s rx %s/s retrans %" PRIu64 " srtt %uus%s\n",
			       peer, c->sport, e, g, c->retrans, c->srtt_us, c->closed ? " (closed)" : "");
		}
	}
	for (size_t i = 0; i < s->n_ev; i++) {
		char v[24];

		char what[96];

		cli_fmt_ns(v, sizeof(v), (double)s->ev[i].value_ns);
		outlier_detail(&s->ev[i], what, sizeof(what), false);
		printf("outlier %-12s pid %u tid %u %s %s\n", obs_event_kind_name(s->ev[i].kind), s->ev[i].tgid,
		       s->ev[i].tid, s->ev[i].kind == OBS_EV_RETRANS ? "" : v, what);
	}
	if (s->ev_dropped)
		printf("outliers not shown: %" PRIu64 "\n", s->ev_dropped);
	for (size_t i = 0; i < s->n_exited; i++) {
		const struct proc *p = obs_proc_find(s, s->exited[i]);

		printf("exited   pid %d %s\n", s->exited[i], p ? p->comm : "");
	}
	if (s->repin) {
		const struct nbpf_repin_stats *st = nbpf_repin_stats(s->repin);

		printf("numa re-pin  %" PRIu64 " threads  moved home %" PRIu64 "  left (pinned "
		       "elsewhere) %" PRIu64 "  over budget %" PRIu64 "  failed %" PRIu64 "\n",
		       st->tracked, st->moved, st->pinned, st->limited, st->failed);
	}
	fflush(stdout);
}

#endif

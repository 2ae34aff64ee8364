// SPDX-License-Identifier: Apache-2.0
/*
 * prom.c - the kernel-side series in Prometheus text format, next to the
 * plugin's collective series (src/nccl/prom.c) in one exposition.
 *
 * Units are base units (seconds, bytes); histograms use the same powers of
 * two as the collective latency histograms.  Entries that share a label
 * set (two sockets to one peer, two partitions' requests) are merged, so
 * every series appears once.
 */
#include "observe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct agg {
	char labels[320];
	struct obs_hist h;
	double v;
};

struct agg_set {
	struct agg *a;
	size_t n, cap;
};

static struct agg *agg_get(struct agg_set *s, const char *labels)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->a[i].labels, labels))
			return &s->a[i];
	if (s->n == s->cap) {
		struct agg *p = realloc(s->a, (s->cap = s->cap ? s->cap * 2 : 16) * sizeof(*p));

		if (!p)
			return NULL;
		s->a = p;
	}
	memset(&s->a[s->n], 0, sizeof(s->a[s->n]));
	snprintf(s->a[s->n].labels, sizeof(s->a[s->n].labels), "%s", labels);
	return &s->a[s->n++];
}

static void hist_merge(struct obs_hist *d, const struct obs_hist *h)
{
	for (int i = 0; i < OBS_HIST_SLOTS; i++)
		d->slot[i] += h->slot[i];
	d->count += h->count;
	d->sum += h->sum;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * Cumulative buckets le = 2^(i+1) * scale for slots first..last, then
 * +Inf; slots below first fold into the first bucket shown.
 */
static void put_hist(FILE *f, const char *name, const struct agg_set *s, double scale, int first,
		     int last)
{
	for (size_t k = 0; k < s->n; k++) {
		const struct agg *a = &s->a[k];
		const char *sep = a->labels[0] ? "," : "";
		uint64_t cum = 0;

		for (int i = 0; i < OBS_HIST_SLOTS; i++) {
			cum += a->h.slot[i];
			if (i < first || i > last)
				continue;
			fprintf(f, "%s_bucket{%s%sle=\"%.10g\"} %" PRIu64 "\n", name, a->labels, sep,
				ldexp(scale, i + 1), cum);
		}
		fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, a->labels, sep, a->h.count);
		fprintf(f, "%s_sum{%s} %.9g\n", name, a->labels, (double)a->h.sum * scale);
		fprintf(f, "%s_count{%s} %" PRIu64 "\n", name, a->labels, a->h.count);
	}
}

static void put_val(FILE *f, const char *name, const struct agg_set *s)
{
	for (size_t k = 0; k < s->n; k++)
		fprintf(f, "%s{%s} %.9g\n", name, s->a[k].labels, s->a[k].v);
}

static const char *op_name(uint32_t op)
{
	return op == OBS_OP_READ ? "read" : op == OBS_OP_WRITE ? "write" : "other";
}

static const char *proc_labels(nbpf_obs_label_fn fn, void *ctx, uint32_t tgid, char *buf, size_t n)
{
	const char *l = fn ? fn(ctx, tgid) : NULL;

	if (l)
		return l;
	snprintf(buf, n, "pid=\"%u\"", tgid);
	return buf;
}

void nbpf_obs_peer_str(const struct obs_conn *c, char *out, size_t n, bool port)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(c->family == AF_INET6 ? AF_INET6 : AF_INET, c->daddr, a, sizeof(a));
	if (!port)
		snprintf(out, n, "%s", a);
	else if (c->family == AF_INET6)
		snprintf(out, n, "[%s]:%u", a, c->dport);
	else
		snprintf(out, n, "%s:%u", a, c->dport);
}

#define NS 1e-9

int nbpf_obs_prom_write(FILE *f, const struct nbpf_obs_snap *s, nbpf_obs_label_fn fn, void *ctx)
{
	struct agg_set lat = { 0 }, size = { 0 }, align = { 0 }, small = { 0 }, unal = { 0 }, errs = { 0 };
	struct agg_set unseen = { 0 };
	struct agg_set ur = { 0 }, pca = { 0 }, pcm = { 0 }, tx = { 0 }, rx = { 0 }, rt = { 0 };
	struct agg_set srtt = { 0 }, rq = { 0 }, off = { 0 }, mig = { 0 }, xnode = { 0 };
	struct agg_set launch = { 0 }, sync = { 0 }, copy = { 0 }, ioc = { 0 }, lgap = { 0 }, sgap = { 0 };
	struct agg_set ncpu = { 0 }, nmem = { 0 };
	struct agg_set *all[] = { &lat, &size, &align, &small, &unal, &errs, &unseen, &ur, &pca, &pcm, &tx, &rx, &rt,
				  &srtt, &rq, &off, &mig, &xnode, &launch, &sync, &copy, &ioc, &lgap,
				  &sgap, &ncpu, &nmem };
	char opb[16];
	char l[320], pb[64], peer[64];
	struct agg *a;
	int err = 0;

#define GET(set) if (!(a = agg_get(&set, l))) { err = -ENOMEM; goto out; }
	for (size_t i = 0; i < s->n_blk; i++) {
		const struct nbpf_obs_blk *b = &s->blk[i];

		snprintf(l, sizeof(l), "%s,device=\"%u:%u\",op=\"%s\"",
			 proc_labels(fn, ctx, b->k.tgid, pb, sizeof(pb)), b->k.dev >> 20,
			 b->k.dev & 0xfffff, op_name(b->k.op));
		GET(lat); hist_merge(&a->h, &b->v.lat);
		GET(size); hist_merge(&a->h, &b->v.size);
		GET(align); hist_merge(&a->h, &b->v.align);
		GET(small); a->v += (double)b->v.small;
		GET(unal); a->v += (double)b->v.unaligned;
		GET(errs); a->v += (double)b->v.errors;
		GET(unseen); a->v += (double)b->v.unseen;
	}
	for (size_t i = 0; i < s->n_uring; i++) {
		const char *op = nbpf_obs_uring_op_name(s->uring[i].k.opcode);

		if (!op)
			snprintf(opb, sizeof(opb), "%u", s->uring[i].k.opcode), op = opb;
		snprintf(l, sizeof(l), "%s,opcode=\"%s\"",
			 proc_labels(fn, ctx, s->uring[i].k.tgid, pb, sizeof(pb)), op);
		GET(ur); hist_merge(&a->h, &s->uring[i].v);
	}
	for (size_t i = 0; i < s->n_pcache; i++) {
		snprintf(l, sizeof(l), "%s", proc_labels(fn, ctx, s->pcache[i].tgid, pb, sizeof(pb)));
		GET(pca); a->v += (double)s->pcache[i].v.accessed;
		GET(pcm); a->v += (double)s->pcache[i].v.added;
	}
	for (size_t i = 0; i < s->n_conn; i++) {
		const struct obs_conn *c = &s->conn[i].v;

		nbpf_obs_peer_str(c, peer, sizeof(peer), false);
		snprintf(l, sizeof(l), "%s,peer=\"%s\"", proc_labels(fn, ctx, c->tgid, pb, sizeof(pb)),
			 peer);
		GET(tx); a->v += (double)c->bytes_sent;
		GET(rx); a->v += (double)c->bytes_recv;
		GET(rt); a->v += (double)c->retrans;
		/* A gauge of the live connections only: it leaves with the last of them. */
		if (c->closed || !c->srtt_us)
			continue;
		GET(srtt); if (c->srtt_us * 1e-6 > a->v) a->v = c->srtt_us * 1e-6;
	}
	for (size_t i = 0; i < s->n_sched; i++) {
		snprintf(l, sizeof(l), "%s", proc_labels(fn, ctx, s->sched[i].tgid, pb, sizeof(pb)));
		GET(rq); hist_merge(&a->h, &s->sched[i].v.runq);
		GET(off); hist_merge(&a->h, &s->sched[i].v.offcpu);
		GET(mig); a->v += (double)s->sched[i].v.migrations;
		GET(xnode); a->v += (double)s->sched[i].v.cross_node;
	}
	/* NUMA placement: where the threads ran, and where the memory is (numa_maps, every 5 s). */
	for (size_t i = 0; i < s->n_sched; i++) {
		const char *pl = proc_labels(fn, ctx, s->sched[i].tgid, pb, sizeof(pb));
		uint64_t mem[OBS_NUMA_NODES];
		int nn = nbpf_obs_numa_mem_cached((int)s->sched[i].tgid, mem, OBS_NUMA_NODES);

		for (int n = 0; n < OBS_NUMA_NODES; n++) {
			snprintf(l, sizeof(l), "%s,node=\"%d\"", pl, n);
			if (s->sched[i].v.node_ns[n]) {
				GET(ncpu); a->v += (double)s->sched[i].v.node_ns[n] * NS;
			}
			if (n < nn) {
				GET(nmem); a->v = (double)mem[n];
			}
		}
	}
	for (size_t i = 0; i < s->n_gpu; i++) {
		snprintf(l, sizeof(l), "%s", proc_labels(fn, ctx, s->gpu[i].tgid, pb, sizeof(pb)));
		GET(launch); a->v += (double)s->gpu[i].v.launches;
		GET(sync); hist_merge(&a->h, &s->gpu[i].v.sync);
		GET(copy); hist_merge(&a->h, &s->gpu[i].v.copy);
		GET(ioc); hist_merge(&a->h, &s->gpu[i].v.ioctl);
		GET(lgap); hist_merge(&a->h, &s->gpu[i].v.launch_gap);
		GET(sgap); hist_merge(&a->h, &s->gpu[i].v.sync_gap);
	}
#undef GET
	family(f, "ncclbpf_block_request_latency_seconds", "histogram",
	       "Block requests of the job, from the block layer's start stamp (as /sys/block stat times them) to completion, by device and operation.");
	put_hist(f, "ncclbpf_block_request_latency_seconds", &lat, NS, 7, 37);
	family(f, "ncclbpf_block_request_size_bytes", "histogram", "Size of the job's block requests.");
	put_hist(f, "ncclbpf_block_request_size_bytes", &size, 1, 8, 30);
	family(f, "ncclbpf_block_request_alignment_bytes", "histogram",
	       "Alignment of the job's block requests: the largest power of two dividing offset and length.");
	put_hist(f, "ncclbpf_block_request_alignment_bytes", &align, 1, 8, 30);
	family(f, "ncclbpf_block_small_requests_total", "counter",
	       "Block requests below 16 KiB.");
	put_val(f, "ncclbpf_block_small_requests_total", &small);
	family(f, "ncclbpf_block_unaligned_requests_total", "counter",
	       "Block requests whose offset or length is not a multiple of 4 KiB.");
	put_val(f, "ncclbpf_block_unaligned_requests_total", &unal);
	family(f, "ncclbpf_block_request_errors_total", "counter", "Block requests completed with an error.");
	put_val(f, "ncclbpf_block_request_errors_total", &errs);
	family(f, "ncclbpf_block_unseen_completions_total", "counter",
	       "Block requests the kernel completed without running the completion program: in the size "
	       "histogram's count, not in the latency histogram.");
	put_val(f, "ncclbpf_block_unseen_completions_total", &unseen);
	family(f, "ncclbpf_io_uring_latency_seconds", "histogram",
	       "io_uring requests of the job, submission to completion, by opcode.");
	put_hist(f, "ncclbpf_io_uring_latency_seconds", &ur, NS, 7, 37);
	family(f, "ncclbpf_page_cache_lookup_pages_total", "counter",
	       "Pages the job's reads looked up in the page cache.");
	put_val(f, "ncclbpf_page_cache_lookup_pages_total", &pca);
	family(f, "ncclbpf_page_cache_miss_pages_total", "counter",
	       "Pages the job's threads added to the page cache (misses).");
	put_val(f, "ncclbpf_page_cache_miss_pages_total", &pcm);
	family(f, "ncclbpf_tcp_sent_bytes_total", "counter",
	       "Bytes the job sent over TCP and the peer acknowledged, by peer.");
	put_val(f, "ncclbpf_tcp_sent_bytes_total", &tx);
	family(f, "ncclbpf_tcp_received_bytes_total", "counter", "Bytes the job received over TCP, by peer.");
	put_val(f, "ncclbpf_tcp_received_bytes_total", &rx);
	family(f, "ncclbpf_tcp_retransmits_total", "counter", "TCP segments retransmitted to the peer (the kernel's tcpi_total_retrans).");
	put_val(f, "ncclbpf_tcp_retransmits_total", &rt);
	family(f, "ncclbpf_tcp_srtt_seconds", "gauge",
	       "Smoothed round-trip time to the peer (largest over its open connections).");
	put_val(f, "ncclbpf_tcp_srtt_seconds", &srtt);
	family(f, "ncclbpf_runqueue_latency_seconds", "histogram",
	       "Time the job's threads waited runnable for a CPU.");
	put_hist(f, "ncclbpf_runqueue_latency_seconds", &rq, NS, 7, 37);
	family(f, "ncclbpf_offcpu_seconds", "histogram",
	       "Time the job's threads spent blocked, from switching out to running again.");
	put_hist(f, "ncclbpf_offcpu_seconds", &off, NS, 7, 37);
	family(f, "ncclbpf_migrations_total", "counter", "CPU migrations of the job's threads.");
	put_val(f, "ncclbpf_migrations_total", &mig);
	family(f, "ncclbpf_numa_migrations_total", "counter",
	       "CPU migrations of the job's threads that crossed NUMA nodes.");
	put_val(f, "ncclbpf_numa_migrations_total", &xnode);
	family(f, "ncclbpf_gpu_launches_total", "counter", "CUDA kernel and graph launches.");
	put_val(f, "ncclbpf_gpu_launches_total", &launch);
	family(f, "ncclbpf_gpu_sync_seconds", "histogram", "Time blocked in CUDA synchronize calls.");
	put_hist(f, "ncclbpf_gpu_sync_seconds", &sync, NS, 7, 37);
	family(f, "ncclbpf_gpu_copy_seconds", "histogram", "Time in synchronous CUDA copies.");
	put_hist(f, "ncclbpf_gpu_copy_seconds", &copy, NS, 7, 37);
	family(f, "ncclbpf_gpu_ioctl_seconds", "histogram", "ioctl calls on /dev/nvidia* descriptors.");
	put_hist(f, "ncclbpf_gpu_ioctl_seconds", &ioc, NS, 7, 37);
	family(f, "ncclbpf_gpu_launch_gap_seconds", "histogram",
	       "Time between two CUDA launches of the process (any of its threads).");
	put_hist(f, "ncclbpf_gpu_launch_gap_seconds", &lgap, NS, 7, 37);
	family(f, "ncclbpf_gpu_sync_gap_seconds", "histogram",
	       "Time from a CUDA synchronize returning to the process's next launch.");
	put_hist(f, "ncclbpf_gpu_sync_gap_seconds", &sgap, NS, 7, 37);
	family(f, "ncclbpf_numa_cpu_seconds_total", "counter",
	       "CPU time the process's threads ran on each NUMA node's CPUs.");
	put_val(f, "ncclbpf_numa_cpu_seconds_total", &ncpu);
	family(f, "ncclbpf_numa_memory_bytes", "gauge",
	       "Resident memory of the process on each NUMA node (numa_maps).");
	put_val(f, "ncclbpf_numa_memory_bytes", &nmem);
	family(f, "ncclbpf_observe_events_lost_total", "counter",
	       "Outlier events dropped because the ring buffer was full.");
	fprintf(f, "ncclbpf_observe_events_lost_total %" PRIu64 "\n", s->events_lost);
	family(f, "ncclbpf_observe_untracked_total", "counter",
	       "I/O events not counted: a request's in-flight slots, or its process's figure slots, were full.");
	fprintf(f, "ncclbpf_observe_untracked_total %" PRIu64 "\n", s->untracked);
out:
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]->a);
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

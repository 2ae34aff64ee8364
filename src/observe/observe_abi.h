/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe_abi.h - the records the kernel probes (bpf/NAME.bpf.c) leave in
 * their maps and ring buffer, and the configuration they are loaded with.
 * Included by both sides: BPF programs (after vmlinux.h) and user space
 * (<stdint.h>), hence the obs_u* names.
 */
#ifndef NCCLBPF_OBSERVE_ABI_H
#define NCCLBPF_OBSERVE_ABI_H

#ifdef __VMLINUX_H__
typedef __u8 obs_u8;
typedef __u16 obs_u16;
typedef __u32 obs_u32;
typedef __u64 obs_u64;
#else
#include <stdint.h>
typedef uint8_t obs_u8;
typedef uint16_t obs_u16;
typedef uint32_t obs_u32;
typedef uint64_t obs_u64;
#endif

/*
 * log2 histograms: slot i counts values in [2^i, 2^(i+1)) of the unit
 * (ns for latencies, bytes for sizes); slot 0 also holds 0.  The same
 * shape as the plugin's collective histograms (NBPF_TELE_LAT_BUCKETS), so
 * one quantile and one Prometheus writer serve both.
 */
#define OBS_HIST_SLOTS 40

struct obs_hist {
	obs_u64 slot[OBS_HIST_SLOTS];
	obs_u64 count;
	obs_u64 sum;
};

/* Which processes the probes count (obs_cfg.mode). */
enum obs_mode {
	OBS_MODE_PIDS = 0,   /* tgid's bit set in the targets map */
	OBS_MODE_CGROUP = 1, /* cgroup v2 id, or one of its descendants */
	OBS_MODE_COMM = 2,   /* the process's (thread group leader's) comm */
};

/* The targets bitmap covers every tgid the kernel can hand out (PID_MAX_LIMIT on 64-bit). */
#define OBS_PID_LIMIT (4u * 1024 * 1024)
#define OBS_PID_WORDS (OBS_PID_LIMIT / 64)

#define OBS_COMM_LEN 16
#define OBS_MAX_DEV_MAJORS 8
#define OBS_MAX_CPUS 1024

struct obs_cfg {
	/*
	 * What the programs read on every event comes first, in one cache line
	 * (the map is page-aligned): mode, flags, the outlier threshold, the
	 * block table's test settings.
	 */
	obs_u32 mode;
	obs_u32 flags;         /* OBS_CFG_* */
	obs_u64 outlier_ns;    /* latencies above this also go to the ring buffer */
	/*
	 * Tests only (NCCLBPF_OBSERVE_BLK_TEST), 0 for the defaults: the block
	 * in-flight table cut to blk_test_slots (a power of two), a slot stale
	 * after blk_test_stale_j jiffies, and one block completion in every
	 * blk_test_drop left unseen, as the kernel sometimes leaves one; so the
	 * accounting of full, stale and unseen requests is checked against the
	 * disk's counts.  Constants to the verifier, which drops the code when 0.
	 */
	obs_u32 blk_test_slots, blk_test_stale_j, blk_test_drop;
	obs_u32 cg_level;      /* depth of the cgroup in the v2 hierarchy */
	obs_u64 cg_id;
	obs_u64 t0_ns;         /* CLOCK_MONOTONIC at open: a thread born since has no past unseen */
	char comm[OBS_COMM_LEN];
	obs_u32 gpu_majors[OBS_MAX_DEV_MAJORS]; /* char majors of /dev/nvidia*; 0 ends */
};

/* tcp_retransmit_skb passes the retransmit's result (6.9+): count only the ones that went out. */
#define OBS_CFG_RETRANS_ERR 1u
/* Each NUMA-crossing migration of a job thread also goes to the ring buffer (re-pinning). */
#define OBS_CFG_NUMA_EVENTS 2u
/*
 * Run-queue latency from the scheduler's own accounting (CONFIG_SCHED_INFO:
 * task_struct.sched_info's runs and their wait), read at sched_switch for
 * the thread leaving: no program on wakeups, no work for the thread coming
 * in.  Without it, the wakeup programs time it.
 */
#define OBS_CFG_SCHED_INFO 4u
/* io_uring_complete passes its request as a void * (a number to the verifier): used as is. */
#define OBS_CFG_URING_REQ_VOID 8u
/*
 * A block device keeps no iostats, so the block layer stamps none of its
 * requests (request.start_time_ns): the submit program stamps them itself.
 */
#define OBS_CFG_BLK_UNSTAMPED 16u
/*
 * The deep tier may be switched on (nbpf_obs_opts.deep).  Without it the
 * verifier drops the code that reads its switch on every latency (no
 * difference in the overhead benchmark: docs/benchmarks.md).
 */
#define OBS_CFG_DEEP 32u

/* Block requests: per process, device and operation. */
enum obs_io_op { OBS_OP_READ = 0, OBS_OP_WRITE = 1, OBS_OP_OTHER = 2 };

struct obs_blk_key {
	obs_u32 tgid;
	obs_u32 dev;   /* major << 20 | minor, the kernel's dev_t */
	obs_u32 op;    /* enum obs_io_op */
	obs_u32 pad;
};

/*
 * The io set's figures (block, io_uring, page cache) live in per-CPU
 * arrays of OBS_IO_SLOTS; an index (an array of as many packed keys) says
 * whose: slot i holds the figures of the key in index entry i, 0 where
 * unused.  A key takes the first free entry of the eight in its line of
 * the index (the next line's when those are taken) and keeps it.  Packed:
 * tgid in bits 0-21 (PID_MAX_LIMIT is 2^22), then the block operation in
 * 22-23 and the device in 24-55, or the io_uring opcode from bit 22; never
 * 0, as a tgid is never 0.
 */
#define OBS_IO_SLOTS 1024
#define OBS_KEY_TGID(k) ((obs_u32)((k) & 0x3fffff))
#define OBS_KEY_BLK(tgid, dev, op) ((obs_u64)(tgid) | (obs_u64)((op) & 3) << 22 | (obs_u64)(dev) << 24)
#define OBS_KEY_BLK_OP(k) ((obs_u32)((k) >> 22) & 3)
#define OBS_KEY_BLK_DEV(k) ((obs_u32)((k) >> 24))
#define OBS_KEY_URING(tgid, opcode) ((obs_u64)(tgid) | (obs_u64)(opcode) << 22)
#define OBS_KEY_URING_OP(k) ((obs_u32)((k) >> 22))

/* Reads below this are "small" (OBS_SMALL_IO), unaligned = offset or length not 4 KiB aligned. */
#define OBS_SMALL_IO 16384
#define OBS_ALIGN 4096

struct obs_blk_val {
	struct obs_hist lat;   /* start stamp (request.start_time_ns) -> complete, ns */
	struct obs_hist size;  /* bytes per request */
	struct obs_hist align; /* largest power of two dividing both offset and length, bytes */
	obs_u64 small;
	obs_u64 unaligned;
	obs_u64 errors;
	/* Completed without the completion program running (found at the request's reuse): in size only. */
	obs_u64 unseen;
};

/*
 * A request in flight (io.bpf.c's tables): block requests from claim to
 * completion, io_uring requests from submit to completion.  User space
 * reads the block table for requests claimed and not seen complete.
 * One cache line (the tables are page-aligned): the claim and the
 * completion run on different CPUs, and each line they share moves
 * between them once per request.
 */
#define OBS_INFL_SLOTS 16384 /* slots of each in-flight table: a power of two */
#define OBS_INFL_WAYS 4      /* the slots a key may take, from its first one on */

struct obs_inflight {
	obs_u64 key; /* the object's address, as a number; 0: free */
	obs_u64 ts;
	obs_u32 tgid, tid, opcode, j; /* opcode: io_uring's, or a block OBS_OP_*; j: jiffies at the claim */
	obs_u32 dev, len;             /* block: the request's device and size at the claim */
	obs_u32 done, pad;            /* block: bytes its earlier parts completed (counted already) */
	obs_u64 spare[2];
};

/* io_uring requests: per process and opcode. */
struct obs_uring_key {
	obs_u32 tgid;
	obs_u32 opcode;
};

/* Page cache: pages the job's threads asked for and pages they had to add (misses). */
struct obs_pcache_val {
	obs_u64 accessed;
	obs_u64 added;
};

/*
 * TCP: one record per connection of the job, holding the kernel's own
 * per-socket counters (tcp_sock: bytes_acked, bytes_received,
 * total_retrans, srtt_us, rtt_min), copied when user space scans the job's
 * sockets and once more when the connection reaches TCP_CLOSE.
 */
struct obs_conn {
	obs_u32 tgid;
	obs_u16 family;       /* AF_INET / AF_INET6 */
	obs_u16 sport, dport; /* host order */
	obs_u8 closed;        /* TCP_CLOSE seen: the counters are final */
	obs_u8 retired;       /* user space: the closed connections of one peer, summed */
	obs_u8 saddr[16], daddr[16]; /* IPv4 in the first 4 bytes */
	obs_u32 pad;
	obs_u64 id;           /* unique per record: a socket address can be reused */
	obs_u64 bytes_sent, bytes_recv; /* acknowledged by the peer; received in order */
	obs_u64 retrans;      /* segments retransmitted (tcpi_total_retrans) */
	obs_u32 srtt_us, min_rtt_us;
};

/* NUMA nodes the per-node figures distinguish; higher nodes count in the last. */
#define OBS_NUMA_NODES 8
/* Processes the sched set keeps figures for (its per-CPU array of struct obs_sched_val). */
#define OBS_SCHED_SLOTS 1024

/* Scheduling: per process. */
struct obs_sched_val {
	struct obs_hist runq;   /* wakeup or preemption -> on CPU, ns */
	struct obs_hist offcpu; /* blocked switch-out -> switch-in, ns */
	obs_u64 migrations, cross_node;
	obs_u64 node_ns[OBS_NUMA_NODES]; /* time its threads ran on each node's CPUs */
};

/* GPU submission: per process. */
struct obs_gpu_val {
	obs_u64 launches;
	struct obs_hist sync;   /* time blocked in cu*Synchronize, ns */
	struct obs_hist copy;   /* time in synchronous cuMemcpy*, ns */
	struct obs_hist ioctl;  /* ioctl on /dev/nvidia* descriptors, ns */
	/*
	 * Submission gaps, any thread of the process: from one launch to the
	 * next, and from a synchronize returning to the next launch (the host's
	 * share of a step the GPU may sit idle through), ns.
	 */
	struct obs_hist launch_gap;
	struct obs_hist sync_gap;
};

/*
 * Tiered tracing.  The cheap tier (histograms, counters, outliers above
 * obs_cfg.outlier_ns) is always on; the deep tier also sends every latency
 * record (block, io_uring, run queue) to the ring buffer while it is on, at
 * most a budget per second.  User space switches it (map tier_ctl, one
 * entry); each CPU keeps its own token bucket (map tier_bucket, per CPU):
 * tracing programs may not take a bpf_spin_lock, and per-CPU state needs no
 * lock.  Shared by the sets like the target table.
 */
struct obs_tier_ctl {
	obs_u64 until_ns;      /* on while bpf_ktime_get_ns() < until_ns; 0: off */
	obs_u64 per_cpu_per_s; /* records per second (and burst) each CPU may send */
};

struct obs_tier_bucket {
	obs_u64 tokens, last_ns;
	obs_u64 sent, dropped; /* deep-tier records sent, and refused by the budget */
};

/* Outliers: one ring-buffer record each. */
enum obs_event_kind {
	OBS_EV_BLOCK = 1,   /* a = dev, b = bytes */
	OBS_EV_URING = 2,   /* a = opcode */
	OBS_EV_RUNQ = 3,
	OBS_EV_OFFCPU = 4,
	OBS_EV_RETRANS = 5, /* a = dport, b = daddr (IPv4) */
	OBS_EV_SYNC = 6,
	OBS_EV_IOCTL = 7,   /* a = cmd */
	OBS_EV_NUMA = 8,    /* a = source CPU, b = destination CPU; value_ns = 0 */
};

struct obs_event {
	obs_u64 ts_ns;     /* CLOCK_MONOTONIC */
	obs_u64 value_ns;
	obs_u64 a, b;
	obs_u32 tgid, tid;
	obs_u32 kind;
	obs_u32 pad;
};

#endif

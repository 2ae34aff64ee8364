/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emu_trace.h - traces of what NCCL does at the plugin boundaries, as
 * libncclbpf-rec.so (rec.c) writes them, and what the project learns from
 * them: reading, per-collective joins of the tuner's decision with what
 * NCCL ran, and the shape of a job that the emulator must reproduce.
 *
 * A trace is text, one call per line: KIND t=THREAD us=TIME KEY=VALUE...
 * ("# " lines are comments).  The kinds:
 *
 *   tinit   tuner init: ctx comm ranks nodes nvl rc
 *   tconst  the tuner constants NCCL passed (base hw llmax ring128 tree128 tree nvlstree)
 *   tcall   getCollInfo's arguments: ctx coll bytes pipe reg na np nch cost (na x np floats)
 *   tret    what came back: rc nch edit (CELL:VALUE cells the plugin changed, "-" none) cyc
 *   tfini   tuner finalize
 *   pinit   profiler init: ctx comm name nodes ranks rank mask_in mask rc
 *   pstart  startEvent: ctx type parent rank, the descriptor's fields, h (the handle) cyc
 *   pstate  recordEventState: h state ptimer|arg cyc
 *   pstop   stopEvent: h cyc
 *   pfini   profiler finalize
 *   n...    net v11 calls: ninit ndevices nprops nlisten nconnect naccept nregmr
 *           nderegmr nisend nirecv niflush ntest (with the test polls that found
 *           nothing, polls=) nclosesend ncloserecv ncloselisten nconsumed nfini nattr
 *
 * cyc is the target's own time for the call in TSC cycles; "# clock MONO_NS
 * TSC" comments (at the start and at each flush) convert it.
 */
#ifndef NCCLBPF_EMU_TRACE_H
#define NCCLBPF_EMU_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct emu_trace_ev {
	char kind[16];
	int tid;
	char *line;          /* the whole line, owned by the trace */
};

struct emu_trace {
	char *path;
	char *buf;           /* the file; lines point into it */
	struct emu_trace_ev *ev;
	size_t n;
	double tsc_per_ns;   /* from the clock comments; 0 when unknown */
	char policy[512];    /* the NCCLBPF_POLICY line of the header ("" none) */
	char target[512];    /* the library the recorder forwarded to ("none": it answered itself) */
};

/* Reads a trace; 0 or a negative errno with a message in err. */
int emu_trace_load(const char *path, struct emu_trace *t, char *err, size_t errlen);
void emu_trace_free(struct emu_trace *t);

/* KEY's value in an event: its text (len in *len), or NULL when absent. */
const char *emu_trace_get(const struct emu_trace_ev *e, const char *key, size_t *len);
long long emu_trace_int(const struct emu_trace_ev *e, const char *key, long long def);
uint64_t emu_trace_u64(const struct emu_trace_ev *e, const char *key, uint64_t def);
/* The value copied into buf (NUL-terminated); def when absent. */
const char *emu_trace_str(const struct emu_trace_ev *e, const char *key, char *buf, size_t n,
			  const char *def);
/* Comma-separated floats into out (at most max); their count. */
int emu_trace_floats(const struct emu_trace_ev *e, const char *key, float *out, int max);

/*
 * One collective of one rank: the tuner call, what the plugin decided, and
 * the profiler's Coll event for the same collective (the k-th getCollInfo
 * of a communicator and its k-th Coll: NCCL asks the tuner once per
 * collective that is alone in its group).
 */
struct emu_trace_coll {
	int coll;
	uint64_t bytes;           /* the tuner's nBytes */
	float cost[21];           /* NCCL's table before the plugin (7 x 3) */
	int n_cells;
	int nch_in, nch_out;      /* nChannels before / after the call */
	int nccl_algo, nccl_proto; /* NCCL's pick from the table as it came */
	int dec_algo, dec_proto;  /* NCCL's pick from the table as the plugin left it */
	bool edited;              /* the plugin changed a cell */
	double tuner_ns;          /* the plugin's time for the call (0: not timed) */
	/* The profiler's Coll (have_coll false when there was none to join). */
	bool have_coll;
	uint64_t seq, count;
	int dsize;                /* bytes per element of the datatype */
	int ran_algo, ran_proto, ran_nch;
	int kch;                  /* KernelCh events under it */
	int kch_after_stop;       /* ...of which started after the Coll stopped */
	int kch_stop_states;      /* KernelCh stop states (with GPU timer) recorded */
};

struct emu_trace_comm {
	uint64_t comm;
	int rank, n_ranks, n_nodes;
	struct emu_trace_coll *colls;
	size_t n_colls;
	size_t n_tuner_calls, n_prof_colls; /* before the join (they should agree) */
	uint64_t starts[16];      /* startEvent calls by type bit (0: Group, 1: Coll, 8: GroupApi ...) */
};

/*
 * The collectives of the trace's communicators (one per comm id seen by a
 * tuner or profiler init), in call order.  0, or -ENOMEM.  Free with
 * emu_trace_comms_free.
 */
int emu_trace_comms(const struct emu_trace *t, struct emu_trace_comm **out, size_t *n);
void emu_trace_comms_free(struct emu_trace_comm *c, size_t n);

/* NCCL's profiler names (RING, LL128, ...) to the tuner's indices; -1 unknown. */
int emu_trace_algo(const char *s);
int emu_trace_proto(const char *s);
int emu_trace_dtype_size(const char *s);

#endif

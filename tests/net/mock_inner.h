/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mock_inner.h - the control block of tests/net/mock_inner.c, a stand-in
 * inner net plugin built once per ABI version (libnccl-net-mockv6.so ...
 * libnccl-net-mockv12.so, each exporting only ncclNetPlugin_vN).  It
 * behaves as NCCL's IB transport and the common external plugins do where
 * the headers leave them a choice, and records what it was given and what
 * it answered on each call, so a test driving the wrapper can check that
 * the wrapper reports exactly what the inner plugin did.
 *
 * The test dlopen()s the same library path the wrapper loads (one copy in
 * the process) and reaches this block through dlsym("mock_ctl").
 */
#ifndef NCCLBPF_TEST_MOCK_INNER_H
#define NCCLBPF_TEST_MOCK_INNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOCK_MAX_RECVS   64          /* grouped receives (NCCL_PROXY_MAX_SUBS) */
#define MOCK_MAX_INFLIGHT 32         /* requests per comm (NCCL_NET_MAX_REQUESTS) */
#define MOCK_OPTIONAL    ((void *)0x1) /* NCCL_NET_OPTIONAL_RECV_COMPLETION */

enum mock_call {
	MC_INIT, MC_DEVICES, MC_PROPS, MC_LISTEN, MC_CONNECT, MC_ACCEPT, MC_REGMR,
	MC_REGMR_DMABUF, MC_DEREGMR, MC_ISEND, MC_IRECV, MC_IFLUSH, MC_TEST, MC_CLOSE_SEND,
	MC_CLOSE_RECV, MC_CLOSE_LISTEN, MC_GET_DEVICE_MR, MC_IRECV_CONSUMED, MC_SET_ATTR,
	MC_FINALIZE, MC_N
};

/* Every property any version has; each build reports the ones its version carries. */
struct mock_props {
	uint64_t guid;
	int ptr_support, reg_is_global, force_flush, speed, port, max_comms, max_recvs;
	int dev_type, dev_version;
	int ndevs, devs[8];          /* vProps */
	float latency;
	size_t max_p2p, max_coll;
	int max_multi;
	int rail, plane;
};

/* What the plugin saw and answered on its last call of one kind. */
struct mock_rec {
	uint64_t count;              /* calls of this kind so far */
	int result;
	int dev;
	void *comm;                  /* the comm, listen comm or context it was given */
	void *req_in;                /* *request on entry (posts, flush) */
	void *req_out;               /* *request, *comm or *mhandle on return */
	int n;
	void *data[MOCK_MAX_RECVS];
	size_t sizes[MOCK_MAX_RECVS];
	int tags[MOCK_MAX_RECVS];
	void *mh[MOCK_MAX_RECVS];
	void *ph[MOCK_MAX_RECVS];    /* v10+: phandle(s) it was given */
	int done;
	bool sizes_given;            /* test: a sizes array was passed */
	int out_sizes[MOCK_MAX_RECVS];
	void **dev_handle;           /* connect/accept v7+: the pointer it was given */
	void *dev_handle_in;         /* and what it pointed to */
	uint64_t comm_id;            /* init v11+ */
	int traffic_class;           /* init v11+, connect v10 */
	void *prof;                  /* init v10+ */
	int type;                    /* regMr */
	uint64_t offset;             /* regMrDmaBuf */
	int fd;
	int32_t attr[3];             /* setNetAttr: op, algo, proto */
};

struct mock_ctl {
	int version;                 /* ABI version this build exports */
	int ndev;
	struct mock_props props;
	/* Behaviour (the test may change it between calls). */
	int fail[MC_N];              /* nonzero: the next call of that kind returns it */
	int connect_polls;           /* connect returns no comm this many times first */
	int accept_polls;            /* accept likewise, once the connector is there */
	int test_polls;              /* a request may be done at its Nth test (>= 1) */
	bool flush;                  /* iflush posts a request (else "nothing to flush") */
	bool optional_early;         /* v9+: a 0x1 receive may complete before its data */
	bool keep_optional;          /* v9+: a 0x1 receive is answered with 0x1 itself */
	bool consume_release;        /* v7+: receives live until irecvConsumed */
	bool dev_offload;            /* connect/accept fill a device handle when asked */
	/* Records. */
	struct mock_rec last[MC_N];
	uint64_t done_msgs[2], done_bytes[2]; /* completions reported: [0] send, [1] recv */
	uint64_t flushes_done;
	uint64_t live_objs;          /* comms, listeners, requests, mhandles, contexts */
	uint64_t violations;         /* calls the ABI (or NCCL's adaptor) never makes */
	char violation[256];         /* the first one */
};

#endif

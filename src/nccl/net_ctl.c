// SPDX-License-Identifier: Apache-2.0
/*
 * net_ctl.c - the net plugin's per-peer telemetry as control-plane records
 * ("npeer": peer msgs(csv send,recv) bytes(csv) sum_ns(csv) errors
 * hist_send(csv) hist_recv(csv)), registered as the control layer's extra
 * telemetry source so that layer need not know the net plugin.
 */
#include "control/ctl_handlers.h"
#include "net_peers.h"

static int put_peer(void *user, const struct net_peer_totals *p)
{
	struct nbpf_ctl_buf *b = user;

	nbpf_ctl_buf_rec(b, "npeer");
	nbpf_ctl_buf_str(b, "peer", p->label);
	nbpf_ctl_buf_u64s(b, "msgs", p->msgs, 2);
	nbpf_ctl_buf_u64s(b, "bytes", p->bytes, 2);
	nbpf_ctl_buf_u64s(b, "sum_ns", p->sum_ns, 2);
	nbpf_ctl_buf_u64(b, "errors", p->errors);
	nbpf_ctl_buf_u64s(b, "hist_send", p->hist[0], NBPF_LAT_BUCKETS);
	nbpf_ctl_buf_u64s(b, "hist_recv", p->hist[1], NBPF_LAT_BUCKETS);
	return 0;
}

static void put_peers(struct nbpf_ctl_buf *b)
{
	net_peers_foreach(put_peer, b);
}

void net_ctl_register(void)
{
	nbpf_ctl_set_tele_source(put_peers);
}

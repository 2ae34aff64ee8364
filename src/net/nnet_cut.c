// SPDX-License-Identifier: Apache-2.0
/*
 * nnet_cut.c - how a sliced message is cut over a connection's data
 * sockets, by the weights the connector chose.
 *
 * Both ends run the same computation on the same inputs (the weights from
 * the connect handshake, the message sizes in sequence order), so the
 * receiver expects on each socket exactly the bytes the sender puts there;
 * nothing about the cut travels per message.
 *
 * A message of at least one minimum chunk per weighted socket is cut in
 * proportion to the weights, exactly up to a few bytes of rounding.  A
 * smaller one is cut into fewer equal slices, each on one of the sockets
 * the weights owe the most bytes so far (a per-socket credit, scaled by
 * the weight sum), so the weights hold over the bytes moved; a socket
 * still carries at most one slice per message, which caps the share a
 * single socket can take of such messages at one slice's worth.  With
 * equal weights this is the round robin the transport always did.
 */
#include <errno.h>
#include <string.h>

#include "nnet_internal.h"

/* Credits are bounded so a share the cut cannot give never overflows them. */
#define CREDIT_MAX (INT64_C(1) << 56)

int nnet_weights_check(const uint8_t *w, int nsocks)
{
	bool any = false;

	if (!w || nsocks < 1 || nsocks > NNET_MAX_SOCKS)
		return -EINVAL;
	for (int i = 0; i < NNET_MAX_SOCKS; i++) {
		if (w[i] && i >= nsocks)
			return -EINVAL;
		any |= w[i] != 0;
	}
	return any;
}

/* Takes the connector's weights (all zero: equal shares); both ends call it. */
void nnet_cut_init(struct nnet_comm *c, const uint8_t *w)
{
	bool equal = nnet_weights_check(w, c->nsocks) <= 0;

	c->wsum = 0;
	c->nactive = 0;
	for (int i = 0; i < NNET_MAX_SOCKS; i++) {
		c->weight[i] = i >= c->nsocks ? 0 : equal ? 1 : w[i];
		c->wsum += c->weight[i];
		c->nactive += c->weight[i] != 0;
		c->credit[i] = 0;
	}
}

int nnet_comm_weights(const struct nnet_comm *c, uint8_t w[NNET_MAX_SOCKS])
{
	if (!c || !w)
		return 0;
	memcpy(w, c->weight, NNET_MAX_SOCKS);
	return c->nsocks;
}

static void credit_add(struct nnet_comm *c, int i, int64_t v)
{
	int64_t x = c->credit[i] + v;

	c->credit[i] = x > CREDIT_MAX ? CREDIT_MAX : x < -CREDIT_MAX ? -CREDIT_MAX : x;
}

/* The weighted socket owed the most, not yet taken for this message; ties: lowest index. */
static int most_owed(const struct nnet_comm *c, const bool *taken)
{
	int best = -1;

	for (int i = 0; i < c->nsocks; i++)
		if (c->weight[i] && !taken[i] && (best < 0 || c->credit[i] > c->credit[best]))
			best = i;
	return best;
}

/*
 * Cuts a message of size bytes (size > 0): len[i] is the slice for socket
 * i, 0 for none; slices lie in socket order.  Returns the number of
 * non-empty slices.  Updates the credits: call once per sliced message, in
 * sequence order, on both ends.
 */
int nnet_cut(struct nnet_comm *c, size_t size, size_t len[NNET_MAX_SOCKS])
{
	size_t chunk = c->min_chunk ? c->min_chunk : 1, n = (size + chunk - 1) / chunk;
	size_t q = size / c->wsum, r = size % c->wsum, given = 0;
	bool taken[NNET_MAX_SOCKS] = { false };
	int slices = 0;

	memset(len, 0, NNET_MAX_SOCKS * sizeof(len[0]));
	if (n >= (size_t)c->nactive) {
		/* In proportion; credit keeps only the rounding, the leftover goes to the most owed. */
		for (int i = 0; i < c->nsocks; i++) {
			uint64_t part = (uint64_t)r * c->weight[i];

			len[i] = q * c->weight[i] + part / c->wsum;
			given += len[i];
			credit_add(c, i, (int64_t)(part % c->wsum));
		}
		if (given < size) {
			int k = most_owed(c, taken);

			len[k] += size - given;
			credit_add(c, k, -(int64_t)((size - given) * c->wsum));
		}
	} else {
		size_t each = (size + n - 1) / n;

		for (int i = 0; i < c->nsocks; i++)
			credit_add(c, i, (int64_t)(size * c->weight[i]));
		for (size_t s = 0, off = 0; s < n; s++) {
			int k = most_owed(c, taken);

			taken[k] = true;
			len[k] = off + each <= size ? each : size - off;
			off += len[k];
			credit_add(c, k, -(int64_t)(len[k] * c->wsum));
		}
	}
	for (int i = 0; i < c->nsocks; i++)
		slices += len[i] != 0;
	return slices;
}

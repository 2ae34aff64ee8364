// SPDX-License-Identifier: MIT
/*
 * sha256.c - the runtime's SHA-256 over nettle's (see sha256.h).
 */
#include "sha256.h"

void nbpf_sha256_init(struct nbpf_sha256 *c)
{
	sha256_init(&c->ctx);
}

void nbpf_sha256_update(struct nbpf_sha256 *c, const void *data, size_t len)
{
	sha256_update(&c->ctx, len, data);
}

void nbpf_sha256_final(struct nbpf_sha256 *c, uint8_t out[32])
{
	sha256_digest(&c->ctx, SHA256_DIGEST_SIZE, out);
}

void nbpf_sha256(const void *data, size_t len, uint8_t out[32])
{
	struct nbpf_sha256 c;

	nbpf_sha256_init(&c);
	nbpf_sha256_update(&c, data, len);
	nbpf_sha256_final(&c, out);
}

/* SPDX-License-Identifier: MIT */
/*
 * sha256.h - SHA-256 (FIPS 180-4) for object content tags, from nettle.
 *
 * nettle (Debian's nettle-dev) is small, has no dependency of its own and
 * selects the CPU's SHA instructions at run time, so the NCCL process gains
 * no OpenSSL; this header keeps the runtime's one name for it.
 */
#ifndef NCCLBPF_SHA256_H
#define NCCLBPF_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

struct nbpf_sha256 {
	struct sha256_ctx ctx;
};

void nbpf_sha256_init(struct nbpf_sha256 *c);
void nbpf_sha256_update(struct nbpf_sha256 *c, const void *data, size_t len);
void nbpf_sha256_final(struct nbpf_sha256 *c, uint8_t out[32]);
/* One-shot digest. */
void nbpf_sha256(const void *data, size_t len, uint8_t out[32]);

#endif

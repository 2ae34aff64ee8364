/*
 * sha256.h - SHA-256 (FIPS 180-4), for object content tags.
 *
 * Written here because no installed library offers it without pulling in
 * OpenSSL, which the runtime must not depend on inside NCCL processes.
 */
#ifndef NCCLBPF_SHA256_H
#define NCCLBPF_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct nbpf_sha256 {
	uint32_t h[8];
	uint64_t len;      /* bytes hashed so far */
	uint8_t buf[64];
	uint32_t fill;     /* bytes pending in buf */
};

void nbpf_sha256_init(struct nbpf_sha256 *c);
void nbpf_sha256_update(struct nbpf_sha256 *c, const void *data, size_t len);
void nbpf_sha256_final(struct nbpf_sha256 *c, uint8_t out[32]);
/*
 * Selects the CPU's SHA instructions (enable != 0, where present) or the
 * portable code; returns 1 if the accelerated code is now in use.  The
 * default is the fastest available; tests use this to cover both.
 */
int nbpf_sha256_use_accel(int enable);
/* One-shot digest. */
void nbpf_sha256(const void *data, size_t len, uint8_t out[32]);

#endif

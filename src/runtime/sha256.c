/*
 * sha256.c - SHA-256 (FIPS 180-4).  See sha256.h for why it is here.
 *
 * The content tag is computed on every object open, which is on the
 * reload path, so x86-64 CPUs with the SHA extensions use them (about
 * ten times faster than the portable code); the choice is made once, from
 * CPUID.  Byte order is handled explicitly, so the portable code is
 * correct on any host.
 */
#include "sha256.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define NBPF_SHA_X86 1
#endif

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block_portable(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

#ifdef NBPF_SHA_X86
/*
 * n blocks with SHA-NI.  State is kept as ABEF/CDGH as the instructions
 * want, in registers across blocks; each inner iteration does four rounds
 * and extends the message schedule four words ahead (msg1 + alignr + msg2).
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void blocks_shani(uint32_t h[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i s0, s1, t, abef, cdgh, w[4];

	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1);  /* CDAB */
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* EFGH */
	s0 = _mm_alignr_epi8(t, s1, 8);    /* ABEF */
	s1 = _mm_blend_epi16(s1, t, 0xf0); /* CDGH */
	for (; n; n--, p += 64) {
		abef = s0;
		cdgh = s1;
		for (int i = 0; i < 4; i++)
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
		for (int g = 0; g < 16; g++) {
			__m128i m = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));

			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0e));
			if (g < 12) {
				t = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
				t = _mm_add_epi32(t, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
				w[g & 3] = _mm_sha256msg2_epu32(t, w[(g + 3) & 3]);
			}
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	t = _mm_shuffle_epi32(s0, 0x1b);   /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xb1);  /* DCHG */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, s1, 0xf0)); /* DCBA */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, t, 8));    /* HGFE */
}

static bool cpu_has_shani(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
		return false;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return b & (1u << 29);
}
#endif

/* 0: not decided yet, 1: portable, 2: SHA-NI.  Racing first calls decide alike. */
static int impl;

static void blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
	int v = __atomic_load_n(&impl, __ATOMIC_RELAXED);

	if (!n)
		return;
	if (!v) {
		v = 1;
#ifdef NBPF_SHA_X86
		if (cpu_has_shani())
			v = 2;
#endif
		__atomic_store_n(&impl, v, __ATOMIC_RELAXED);
	}
#ifdef NBPF_SHA_X86
	if (v == 2) {
		blocks_shani(h, p, n);
		return;
	}
#endif
	for (; n; n--, p += 64)
		block_portable(h, p);
}

int nbpf_sha256_use_accel(int enable)
{
	int v = 1;

#ifdef NBPF_SHA_X86
	if (enable && cpu_has_shani())
		v = 2;
#endif
	__atomic_store_n(&impl, v, __ATOMIC_RELAXED);
	return v == 2;
}

void nbpf_sha256_init(struct nbpf_sha256 *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->h, iv, sizeof(iv));
	c->len = 0;
	c->fill = 0;
}

void nbpf_sha256_update(struct nbpf_sha256 *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->len += len;
	if (c->fill) {
		size_t take = 64 - c->fill < len ? 64 - c->fill : len;

		memcpy(c->buf + c->fill, p, take);
		c->fill += (uint32_t)take;
		p += take;
		len -= take;
		if (c->fill < 64)
			return;
		blocks(c->h, c->buf, 1);
		c->fill = 0;
	}
	blocks(c->h, p, len / 64);
	p += len / 64 * 64;
	len %= 64;
	memcpy(c->buf, p, len);
	c->fill = (uint32_t)len;
}

void nbpf_sha256_final(struct nbpf_sha256 *c, uint8_t out[32])
{
	uint64_t bits = c->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t padlen = (c->fill < 56 ? 56 : 120) - c->fill;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
	nbpf_sha256_update(c, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

void nbpf_sha256(const void *data, size_t len, uint8_t out[32])
{
	struct nbpf_sha256 c;

	nbpf_sha256_init(&c);
	nbpf_sha256_update(&c, data, len);
	nbpf_sha256_final(&c, out);
}

/*
 * fuzz_driver.c - runs a libFuzzer-style target without libFuzzer.
 *
 * Linked with a file defining LLVMFuzzerTestOneInput, it makes a bounded
 * fuzz run for the test suite: every file named on the command line (seed
 * corpus) is run as is, then ITERATIONS mutants of them (bit flips, byte
 * sets, truncations, splices, interesting values) from a fixed seed so a
 * failure reproduces.  With clang, build the same target with
 * -fsanitize=fuzzer for open-ended runs (see docs).
 *
 * usage: fuzz_target [-n ITERATIONS] [-s SEED] [CORPUS_FILE...]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static void mutate(uint8_t *buf, size_t *len, size_t cap, const uint8_t *other, size_t olen)
{
	static const uint32_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff,
						0x7fffffff, 0x80000000u, 0xffffffffu };
	int n = 1 + (int)(rng() % 8);

	while (n--) {
		size_t pos = *len ? rng() % *len : 0;

		switch (rng() % 6) {
		case 0:
			if (*len)
				buf[pos] ^= (uint8_t)(1u << (rng() % 8));
			break;
		case 1:
			if (*len)
				buf[pos] = (uint8_t)rng();
			break;
		case 2:
			if (*len)
				*len = rng() % *len;
			break;
		case 3: {
			uint32_t v = interesting[rng() % (sizeof(interesting) / sizeof(interesting[0]))];
			size_t w = 1u << (rng() % 3);

			if (pos + w <= *len)
				memcpy(buf + pos, &v, w);
			break;
		}
		case 4:
			if (other && olen) {
				size_t from = rng() % olen, cnt = rng() % (olen - from) + 1;

				if (pos + cnt > cap)
					cnt = cap - pos;
				memcpy(buf + pos, other + from, cnt);
				if (pos + cnt > *len)
					*len = pos + cnt;
			}
			break;
		default:
			if (*len + 8 <= cap) {
				for (int i = 0; i < 8; i++)
					buf[(*len)++] = (uint8_t)rng();
			}
			break;
		}
	}
}

int main(int argc, char **argv)
{
	unsigned long iterations = 10000;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint8_t **seeds = NULL;
	size_t *lens = NULL, nseeds = 0;
	const char *scale = getenv("NCCLBPF_TEST_SCALE");

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			iterations = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else {
			size_t len = 0;
			uint8_t *b = read_file(argv[i], &len);

			if (!b) {
				fprintf(stderr, "fuzz: cannot read %s\n", argv[i]);
				return 2;
			}
			seeds = realloc(seeds, (nseeds + 1) * sizeof(*seeds));
			lens = realloc(lens, (nseeds + 1) * sizeof(*lens));
			seeds[nseeds] = b;
			lens[nseeds++] = len;
			LLVMFuzzerTestOneInput(b, len);
		}
	}
	if (scale && atof(scale) > 0)
		iterations = (unsigned long)(iterations * atof(scale));
	rng_state = seed ? seed : 1;
	for (unsigned long it = 0; it < iterations; it++) {
		size_t cap = 1 << 16, len = 0;
		uint8_t *buf = malloc(cap);
		const uint8_t *other = NULL;
		size_t olen = 0;

		if (nseeds) {
			size_t s = rng() % nseeds, o = rng() % nseeds;

			len = lens[s] < cap ? lens[s] : cap;
			memcpy(buf, seeds[s], len);
			other = seeds[o];
			olen = lens[o];
		} else {
			len = rng() % 512;
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng();
		}
		mutate(buf, &len, cap, other, olen);
		/* Exact-size copy so ASan sees reads past the end. */
		uint8_t *exact = malloc(len ? len : 1);
		memcpy(exact, buf, len);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
		free(buf);
	}
	for (size_t i = 0; i < nseeds; i++)
		free(seeds[i]);
	free(seeds);
	free(lens);
	printf("fuzz: %zu seeds, %lu mutants, no crash\n", nseeds, iterations);
	return 0;
}

/*
 * verifier.h - entry point of the verifier (see docs/verifier.md).
 */
#ifndef NCCLBPF_VERIFIER_H
#define NCCLBPF_VERIFIER_H

#include "../helpers.h"
#include "../object.h"

/*
 * Proves prog safe against hook.  Fills res (findings allocated, owned by
 * the caller via prog->findings).  Returns 0 when accepted, -EACCES when
 * rejected, other negative errno on bad arguments.
 */
int nbpf_verify(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
		const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res);

/*
 * Verifies a bare instruction sequence (tests, raw programs): maps are
 * what lddw indices refer to, helper_find resolves helper ids (NULL:
 * nbpf_helper_find), prog (optional) supplies line info, map_written
 * (optional, n_maps entries) marks maps some program writes.  res->findings
 * is malloc'd and owned by the caller.
 */
struct nbpf_verify_input {
	const struct nbpf_insn *insns;
	uint32_t n_insns;
	struct ncclbpf_map *const *maps;
	uint32_t n_maps;
	const struct nbpf_helper *(*helper_find)(int32_t id);
	const struct ncclbpf_program *prog;
	const uint8_t *map_written;
};

int nbpf_verify_insns(const struct nbpf_verify_input *in, const struct ncclbpf_hook_desc *hook,
		      const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res);

/*
 * Which maps the programs of obj write (written: obj->n_maps entries, set
 * to 1, never cleared).  fast: the linear provenance scan, exploring only
 * the programs it cannot handle; otherwise every program is explored.
 * nbpf_verify uses the fast form (cached per object content); the other is
 * for tests comparing the two.
 */
void nbpf_object_map_writes(const struct ncclbpf_object *obj, uint8_t *written, bool fast);

/* Forgets the per-object write-set cache (benchmarks of a first verification). */
void nbpf_verify_cache_flush(void);

/*
 * Tests set this to check, at every comparison that skips two callers'
 * frames as identical by their stamps, that they really are (abort()
 * otherwise).  Costs a frame comparison each time; never set in production.
 */
extern int nbpf_verify_selfcheck;

/*
 * The clock of the time guard (the verifying thread's CPU time, in ns).
 * Tests replace it with a slower machine's to show that verdicts do not
 * depend on it; never set in production.
 */
extern uint64_t (*nbpf_verify_clock)(void);

/* Default budgets: insns, states and work decide; the time is a guard. */
#define NBPF_VERIFY_MAX_INSNS  1000000u
#define NBPF_VERIFY_MAX_STATES 16384u
#define NBPF_VERIFY_MAX_WORK   4000000u
#ifndef NBPF_VERIFY_MAX_TIME_MS /* sanitizer builds raise it: see CMakeLists.txt */
#define NBPF_VERIFY_MAX_TIME_MS 20000u
#endif

#endif

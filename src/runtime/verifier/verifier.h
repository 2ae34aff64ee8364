/*
 * verifier.h - entry point of the verifier (see docs/verifier.md).
 */
#ifndef NCCLBPF_VERIFIER_H
#define NCCLBPF_VERIFIER_H

#include "../object.h"

/*
 * Proves prog safe against hook.  Fills res (findings allocated, owned by
 * the caller via prog->findings).  Returns 0 when accepted, -EACCES when
 * rejected, other negative errno on bad arguments.
 */
int nbpf_verify(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
		const struct ncclbpf_verify_opts *opts, struct ncclbpf_verify_result *res);

#endif

/*
 * prog.c - verify, prepare and run programs: the host API glue between the
 * verifier and the two engines.
 *
 * A program becomes runnable only through ncclbpf_program__prepare, which
 * always verifies first; there is no entry point that runs unverified code
 * (raw conformance programs are run by the CLI through nbpf_interp_run
 * directly, never through this API).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "epoch.h"
#include "error.h"
#include "interp.h"
#include "jit/jit.h"
#include "object.h"
#include "verifier/verifier.h"

static void prog_reset_verdict(struct ncclbpf_program *prog)
{
	free(prog->findings);
	prog->findings = NULL;
	memset(&prog->vres, 0, sizeof(prog->vres));
}

static void prog_unprepare(struct ncclbpf_program *prog)
{
	if (prog->jit)
		nbpf_jit_free(prog->jit);
	prog->jit = NULL;
	prog->func = NULL;
	prog->hook = NULL;
	prog->engine = NCCLBPF_ENGINE_DEFAULT;
}

/*
 * Findings in *result point into prog and stay valid until the next verify,
 * prepare or close of prog.
 */
int ncclbpf_program__verify(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
			    const struct ncclbpf_verify_opts *opts,
			    struct ncclbpf_verify_result *result)
{
	int err;

	if (!prog || !hook)
		return nbpf_err(-EINVAL, "verify: program and hook are required");
	prog_reset_verdict(prog);
	err = nbpf_verify(prog, hook, opts, &prog->vres);
	prog->findings = prog->vres.findings;
	if (result)
		*result = prog->vres;
	return err;
}

int ncclbpf_program__prepare(struct ncclbpf_program *prog, const struct ncclbpf_hook_desc *hook,
			     const struct ncclbpf_prepare_opts *opts)
{
	enum ncclbpf_engine engine = opts ? opts->engine : NCCLBPF_ENGINE_DEFAULT;
	struct nbpf_jit_image *img = NULL;
	int err;

	if (!prog || !hook)
		return nbpf_err(-EINVAL, "prepare: program and hook are required");
	prog_unprepare(prog);
	err = ncclbpf_program__verify(prog, hook, opts ? opts->verify : NULL,
				      opts ? opts->result : NULL);
	if (err)
		return err;

	if (engine != NCCLBPF_ENGINE_INTERP) {
		struct nbpf_env env = {
			.maps = prog->obj->maps,
			.n_maps = (uint32_t)prog->obj->n_maps,
			.helper = nbpf_helper_find,
		};

		err = nbpf_jit_compile(prog->insns, prog->n_insns, &env, &img);
		if (err && engine == NCCLBPF_ENGINE_JIT)
			return err;
		/* Default engine: the interpreter is the fallback (other architectures). */
	}
	/* Checked once here, so runs take the interpreter's verified path. */
	if (!img && (err = nbpf_interp_check(prog->insns, prog->n_insns)))
		return err;
	prog->hook = hook;
	prog->jit = img;
	prog->func = img ? img->func : NULL;
	prog->engine = img ? NCCLBPF_ENGINE_JIT : NCCLBPF_ENGINE_INTERP;
	nbpf_err_clear();
	return 0;
}

ncclbpf_func_t ncclbpf_program__func(const struct ncclbpf_program *prog)
{
	return prog ? prog->func : NULL;
}

/*
 * Runs inside an epoch section so that map values the program holds are not
 * recycled under it.  ctx_len must cover the hook's context.
 */
int ncclbpf_program__run(const struct ncclbpf_program *prog, void *ctx, uint64_t ctx_len,
			 uint64_t *ret)
{
	uint64_t r0 = 0;
	int err = 0;

	if (!prog || !prog->hook)
		return nbpf_err(-EINVAL, "run: program is not prepared");
	if (ctx_len < prog->hook->ctx_size)
		return nbpf_err(-EINVAL, "run: context is %llu bytes, hook %s needs %u",
				(unsigned long long)ctx_len, prog->hook->name, prog->hook->ctx_size);
	nbpf_epoch_enter();
	if (prog->func) {
		r0 = prog->func(ctx, ctx_len);
	} else {
		struct nbpf_env env = {
			.maps = prog->obj->maps,
			.n_maps = (uint32_t)prog->obj->n_maps,
			.helper = nbpf_helper_find,
		};

		err = nbpf_interp_run_verified(prog->insns, prog->n_insns, &env, ctx, ctx_len, &r0);
	}
	nbpf_epoch_exit();
	if (!err && ret)
		*ret = r0;
	return err;
}

/* Called by ncclbpf_object__close for each program. */
void nbpf_program_release(struct ncclbpf_program *prog)
{
	prog_unprepare(prog);
	prog_reset_verdict(prog);
}

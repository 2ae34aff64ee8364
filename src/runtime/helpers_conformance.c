/*
 * helpers_conformance.c - the ISA conformance suite's helper set.
 *
 * Only helper 5 exists: "unwind" returns its first argument, and the
 * engines stop the program with r0 = 0 when that argument is 0 (the
 * NBPF_HELPER_UNWIND flag).  Used by the conformance runner, engine tests
 * and the CLI's raw programs; production code resolves helpers with
 * nbpf_helper_find() and never sees this table.
 */
#include "helpers.h"

#include <stddef.h>

static uint64_t conf_unwind(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	(void)r2; (void)r3; (void)r4; (void)r5;
	return r1;
}

static const struct nbpf_helper conformance_helpers[] = {
	{
		.id = 5,
		.name = "unwind",
		.fn = conf_unwind,
		.ret = NBPF_RET_INTEGER,
		.args = { NBPF_ARG_ANYTHING },
		.flags = NBPF_HELPER_UNWIND,
	},
};

const struct nbpf_helper *nbpf_helper_find_conformance(int32_t id)
{
	for (size_t i = 0; i < sizeof(conformance_helpers) / sizeof(conformance_helpers[0]); i++)
		if (conformance_helpers[i].id == id)
			return &conformance_helpers[i];
	return NULL;
}

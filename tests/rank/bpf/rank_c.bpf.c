// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The tester's policy, version c: Ring/SIMPLE (see rank_policy.h). */
#define RANK_PROTO NCCLBPF_PROTO_SIMPLE
#include "rank_policy.h"

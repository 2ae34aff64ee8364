// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The tester's policy, version b: Ring/LL128 (see rank_policy.h). */
#define RANK_PROTO NCCLBPF_PROTO_LL128
#include "rank_policy.h"

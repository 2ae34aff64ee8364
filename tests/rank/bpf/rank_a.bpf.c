// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The tester's policy, version a: Ring/LL (see rank_policy.h). */
#define RANK_PROTO NCCLBPF_PROTO_LL
#include "rank_policy.h"

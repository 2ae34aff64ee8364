// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_interp_switch.c - the interpreter's portable dispatch (one switch,
 * what compilers without computed goto get) through the same semantic
 * cases as test_interp.c: interp.c is compiled here with
 * NBPF_INTERP_SWITCH and its entry points renamed, next to the runtime's
 * threaded build.
 */
#define NBPF_INTERP_SWITCH 1
#define nbpf_interp_run nbpf_interp_run_switch
#define nbpf_interp_check nbpf_interp_check_switch
#define nbpf_interp_run_verified nbpf_interp_run_verified_switch
#include "../../src/runtime/interp.c"
#include "test_interp.c"

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hist.c - size classes of collective telemetry (see hist.h).
 */
#include "hist.h"

unsigned nbpf_size_class(uint64_t bytes)
{
	unsigned cls = 0;
	uint64_t lim = 1024;

	while (cls < NBPF_SIZE_CLASSES - 1 && bytes > lim) {
		cls++;
		lim <<= 4;
	}
	return cls;
}

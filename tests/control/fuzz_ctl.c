/*
 * fuzz_ctl.c - fuzz target for the control protocol's request parsing: the
 * frame header check and the record parser with every accessor the
 * handlers use.  Any input must either parse or be refused cleanly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nbpf_ctl_hdr h;
	struct nbpf_ctl_msg m;
	uint64_t u, list[64];
	int64_t i;

	if (size >= NBPF_CTL_HDR_SIZE) {
		if (nbpf_ctl_hdr_decode(data, NBPF_CTL_MAX_REQUEST, &h) == 0 &&
		    h.len > NBPF_CTL_MAX_REQUEST)
			abort();
	}
	if (nbpf_ctl_msg_parse(NBPF_CTL_RELOAD, data, size, &m) == 0) {
		for (uint32_t r = 0; r < m.n_recs; r++) {
			const struct nbpf_ctl_rec *rec = &m.recs[r];

			if (!rec->kind || !*rec->kind)
				abort();
			(void)nbpf_ctl_rec_get(rec, "path");
			(void)nbpf_ctl_rec_u64(rec, "at_call", &u);
			(void)nbpf_ctl_rec_i64(rec, "err", &i);
			for (uint32_t k = 0; k < rec->n_kv; k++) {
				if (!rec->kv[k].key[0] || strlen(rec->kv[k].val) > size)
					abort();
				(void)nbpf_ctl_parse_u64s(rec->kv[k].val, list, 64);
			}
		}
		(void)nbpf_ctl_msg_status(&m, NULL);
	}
	nbpf_ctl_msg_free(&m);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_maps.c - which maps of an image feed decisions.
 *
 * A decision map is one the tuner program reads (an lddw of the map in its
 * instructions, subprograms included).  What the operator or a loop writes
 * into it changes what ranks decide, so the write must reach every rank at
 * one agreed call (nbpf_host_load_derived), like a reload.  A policy takes
 * a map out of that rule with NCCLBPF_MAP_IMMEDIATE(map) (ncclbpf/policy.h):
 * its values carry their own activation (plan words with a call number),
 * or the tuner reads it for something that decides nothing.  Maps only
 * other programs read (telemetry, net-side marking) decide nothing.
 */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "host_priv.h"
#include "insn.h"
#include "object.h"

#define IMMEDIATE_SECTION ".ncclbpf.immediate"

/* Whether the object bytes declare name NCCLBPF_MAP_IMMEDIATE. */
static bool declared_immediate(const void *buf, size_t len, const char *name)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool hit = false;

	if (!buf || elf_version(EV_CURRENT) == EV_NONE)
		return false;
	elf = elf_memory((char *)buf, len);
	if (!elf)
		return false;
	if (elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while (!hit && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sname = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(sname, IMMEDIATE_SECTION) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		/* NUL-separated names; a missing final NUL ends the last one. */
		for (size_t pos = 0; pos < d->d_size && !hit;) {
			const char *s = (const char *)d->d_buf + pos;
			size_t n = strnlen(s, d->d_size - pos);

			hit = n == strlen(name) && !memcmp(s, name, n);
			pos += n + 1;
		}
	}
out:
	elf_end(elf);
	return hit;
}

static bool immediate(const struct nbpf_image *img, const char *name)
{
	for (uint32_t i = 0; i < img->n_objs; i++)
		if (declared_immediate(img->obj_buf[i], img->obj_len[i], name))
			return true;
	return false;
}

void nbpf_host_find_dmaps(struct nbpf_image *img)
{
	const struct ncclbpf_program *p;
	const struct nbpf_insn *in;

	img->n_dmaps = 0;
	if (!img->tuner)
		return;
	p = img->tuner->prog;
	in = p->insns;
	for (uint32_t i = 0; i + 1 < p->n_insns; i++) {
		const struct ncclbpf_map *m;
		bool dup = false;

		if (in[i].code != NBPF_OP_LDDW)
			continue;
		if ((in[i].src == NBPF_PSEUDO_MAP_IDX || in[i].src == NBPF_PSEUDO_MAP_IDX_VALUE) &&
		    in[i].imm >= 0 && (size_t)in[i].imm < p->obj->n_maps) {
			m = p->obj->maps[in[i].imm];
			for (uint32_t k = 0; k < img->n_dmaps && !dup; k++)
				dup = img->dmaps[k] == m;
			if (!dup && img->n_dmaps < NBPF_HOST_MAX_DMAPS &&
			    !immediate(img, ncclbpf_map__name(m)))
				img->dmaps[img->n_dmaps++] = m;
		}
		i++; /* the second slot of the lddw */
	}
}

bool nbpf_host_map_decides(const struct nbpf_image *img, const struct ncclbpf_map *map)
{
	for (uint32_t i = 0; img && i < img->n_dmaps; i++)
		if (img->dmaps[i] == map)
			return true;
	return false;
}

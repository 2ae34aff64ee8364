/*
 * host_env.c - the ncclbpf_env override table of a policy object (see
 * host_env.h).  Uses libelf directly: the table is data for the host, not
 * something a program reads, so it does not go through the BPF loader.
 */
#include "host_env.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static bool env_name_ok(const char *s, size_t n)
{
	if (n < 6 || strncmp(s, "NCCL_", 5))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Parses "NAME=VALUE\n" lines of text (len bytes, may lack a final NUL). */
static int parse_table(const char *path, const char *text, size_t len, struct nbpf_image *img,
		       char *errbuf, size_t errlen)
{
	size_t pos = 0;

	while (pos < len && text[pos]) {
		size_t end = pos, eq = 0;

		while (end < len && text[end] && text[end] != '\n')
			end++;
		if (end == pos) {
			pos++;
			continue;
		}
		for (size_t i = pos; i < end; i++)
			if (text[i] == '=') {
				eq = i;
				break;
			}
		if (!eq || !env_name_ok(text + pos, eq - pos)) {
			snprintf(errbuf, errlen, "%s: %s: line \"%.*s\" is not NCCL_NAME=VALUE", path,
				 NBPF_ENV_SYMBOL, (int)(end - pos > 80 ? 80 : end - pos), text + pos);
			return -EINVAL;
		}
		for (size_t i = eq + 1; i < end; i++)
			if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
				snprintf(errbuf, errlen, "%s: %s: value of %.*s has control bytes", path,
					 NBPF_ENV_SYMBOL, (int)(eq - pos), text + pos);
				return -EINVAL;
			}
		bool dup = false;

		for (uint32_t i = 0; i < img->n_env; i++)
			dup |= strlen(img->env[i].name) == eq - pos &&
			       !strncmp(img->env[i].name, text + pos, eq - pos);
		if (!dup) {
			struct nbpf_env_override *o;

			if (img->n_env >= NBPF_HOST_MAX_ENV) {
				snprintf(errbuf, errlen, "%s: more than %d env overrides", path,
					 NBPF_HOST_MAX_ENV);
				return -E2BIG;
			}
			o = &img->env[img->n_env];
			o->name = strndup(text + pos, eq - pos);
			o->value = strndup(text + eq + 1, end - eq - 1);
			if (!o->name || !o->value) {
				free(o->name);
				free(o->value);
				o->name = o->value = NULL;
				snprintf(errbuf, errlen, "out of memory");
				return -ENOMEM;
			}
			img->n_env++;
		}
		pos = end;
	}
	return 0;
}

int nbpf_env_read_overrides(const char *path, const void *buf, size_t len,
			    struct nbpf_image *img, char *errbuf, size_t errlen)
{
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	int err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	/* The bytes the loader opened: no second open that could name another file. */
	elf = elf_memory((char *)buf, len);
	if (!elf)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			Elf_Scn *ds;
			GElf_Shdr dsh;
			Elf_Data *dd;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strcmp(name, NBPF_ENV_SYMBOL))
				continue;
			ds = elf_getscn(elf, sym.st_shndx);
			if (!ds || !gelf_getshdr(ds, &dsh) || dsh.sh_type != SHT_PROGBITS ||
			    !(dd = elf_getdata(ds, NULL)) || !dd->d_buf ||
			    sym.st_value > dd->d_size || sym.st_size > dd->d_size - sym.st_value) {
				snprintf(errbuf, errlen, "%s: %s: symbol does not point into initialised data",
					 path, NBPF_ENV_SYMBOL);
				err = -EINVAL;
				goto out;
			}
			err = parse_table(path, (const char *)dd->d_buf + sym.st_value,
					  sym.st_size, img, errbuf, errlen);
			goto out;
		}
	}
out:
	if (elf)
		elf_end(elf);
	return err;
}

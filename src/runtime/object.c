/*
 * object.c - accessors of objects and programs, and ncclbpf_object__close.
 *
 * Accessors tolerate NULL and out-of-range arguments (NULL / 0 / -EINVAL),
 * because hosts call them with whatever the user typed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "error.h"
#include "maps/map.h"
#include "object.h"

/* What verify/prepare attached (findings, JIT image) belongs to prog.c, which frees it. */
static void program_free(struct ncclbpf_program *prog)
{
	if (!prog)
		return;
	nbpf_program_release(prog);
	free(prog->lines);
	free(prog->insns);
	free(prog->section);
	free(prog->name);
	free(prog);
}

/* Frees programs first (their code may refer to maps), then drops map references. */
void ncclbpf_object__close(struct ncclbpf_object *obj)
{
	if (!obj)
		return;
	for (size_t i = 0; i < obj->n_progs; i++)
		program_free(obj->progs[i]);
	free(obj->progs);
	for (size_t i = 0; i < obj->n_maps; i++)
		if (obj->maps[i])
			ncclbpf_map__put(obj->maps[i]);
	free(obj->maps);
	for (size_t i = 0; i < obj->n_strings; i++)
		free(obj->strings[i]);
	free(obj->strings);
	btf__free(obj->btf);
	free(obj->license);
	free(obj->name);
	free(obj);
}

const char *ncclbpf_object__name(const struct ncclbpf_object *obj)
{
	return obj ? obj->name : NULL;
}

const char *ncclbpf_object__license(const struct ncclbpf_object *obj)
{
	return obj ? obj->license : NULL;
}

const char *ncclbpf_object__tag(const struct ncclbpf_object *obj)
{
	return obj ? obj->tag : NULL;
}

size_t ncclbpf_object__prog_count(const struct ncclbpf_object *obj)
{
	return obj ? obj->n_progs : 0;
}

struct ncclbpf_program *ncclbpf_object__prog(const struct ncclbpf_object *obj, size_t i)
{
	return obj && i < obj->n_progs ? obj->progs[i] : NULL;
}

struct ncclbpf_program *ncclbpf_object__find_program(const struct ncclbpf_object *obj,
						     const char *name)
{
	for (size_t i = 0; obj && name && i < obj->n_progs; i++)
		if (!strcmp(obj->progs[i]->name, name))
			return obj->progs[i];
	return NULL;
}

size_t ncclbpf_object__map_count(const struct ncclbpf_object *obj)
{
	return obj ? obj->n_maps : 0;
}

struct ncclbpf_map *ncclbpf_object__map(const struct ncclbpf_object *obj, size_t i)
{
	return obj && i < obj->n_maps ? obj->maps[i] : NULL;
}

struct ncclbpf_map *ncclbpf_object__find_map(const struct ncclbpf_object *obj, const char *name)
{
	for (size_t i = 0; obj && name && i < obj->n_maps; i++)
		if (obj->maps[i]->name && !strcmp(obj->maps[i]->name, name))
			return obj->maps[i];
	return NULL;
}

const char *ncclbpf_program__name(const struct ncclbpf_program *prog)
{
	return prog ? prog->name : NULL;
}

const char *ncclbpf_program__section(const struct ncclbpf_program *prog)
{
	return prog ? prog->section : NULL;
}

size_t ncclbpf_program__insn_count(const struct ncclbpf_program *prog)
{
	return prog ? prog->n_insns : 0;
}

const void *ncclbpf_program__insns(const struct ncclbpf_program *prog)
{
	return prog ? prog->insns : NULL;
}

/*
 * The line entry nearest at or before idx: clang emits one entry where a
 * source line's code starts, and the instructions after it belong to that
 * line until the next entry.
 */
int ncclbpf_program__line(const struct ncclbpf_program *prog, size_t idx,
			  const char **file, uint32_t *line, const char **text)
{
	size_t lo = 0, hi;

	if (!prog)
		return -EINVAL;
	if (idx >= prog->n_insns || !prog->n_lines || prog->lines[0].insn > idx)
		return -ENOENT;
	hi = prog->n_lines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (prog->lines[mid].insn <= idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (file)
		*file = prog->lines[lo - 1].file;
	if (line)
		*line = prog->lines[lo - 1].line;
	if (text)
		*text = prog->lines[lo - 1].text;
	return 0;
}

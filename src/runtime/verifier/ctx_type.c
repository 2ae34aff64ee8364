// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ctx_type.c - the context type a program declares against its hook's.
 *
 * The exploration proves every context access against the hook's field
 * table, so a program written for another hook's context stays memory
 * safe, but it reads the wrong fields: a profiler program taking the
 * tuner's context reads latency bits as a rank count.  The object's BTF
 * says what the entry function takes; the hook's contract names its
 * context type (ncclbpf_hook_desc.ctx_type, a C type such as "struct
 * foo"), so the two are compared by name before anything is explored.
 * The runtime knows no hook's types: the name comes from the contract.
 * Without BTF (an object built without -g) nothing can be checked, and
 * the result says so (ctx_type_checked).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>

#include "../object.h"
#include "vstate.h"

/* Skips const/volatile/restrict, type tags and (when typedefs) typedefs. */
static const struct btf_type *skip(const struct btf *btf, uint32_t *id, bool typedefs)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	for (int depth = 0; t && *id && depth < 32; depth++) {
		if (!btf_is_mod(t) && !btf_is_type_tag(t) && !(typedefs && btf_is_typedef(t)))
			return t;
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return *id ? NULL : t; /* id 0 is void */
}

/* "struct NAME", "union NAME", "void" or the type's own name, as C writes it. */
static void type_name(const struct btf *btf, uint32_t id, const struct btf_type *t, char *out,
		      size_t len)
{
	const char *name = t && id ? btf__name_by_offset(btf, t->name_off) : NULL;

	if (!id)
		snprintf(out, len, "void");
	else if (t && btf_is_struct(t))
		snprintf(out, len, "struct %s", name && *name ? name : "(anonymous)");
	else if (t && btf_is_union(t))
		snprintf(out, len, "union %s", name && *name ? name : "(anonymous)");
	else if (t && btf_is_enum(t))
		snprintf(out, len, "enum %s", name && *name ? name : "(anonymous)");
	else if (t && btf_is_ptr(t))
		snprintf(out, len, "a pointer to a pointer");
	else
		snprintf(out, len, "%s", name && *name ? name : "a non-struct type");
}

static int refuse(struct venv *e, enum vmsg m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A finding at the entry (its line is the function's) whose detail is only the message. */
static int refuse(struct venv *e, enum vmsg m, const char *fmt, ...)
{
	char msg[sizeof(((struct ncclbpf_finding *)0)->detail)];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err = verr(e, 0, m, NULL, "%s", msg);
	if (e->n_findings && e->findings[e->n_findings - 1].kind == NCCLBPF_FINDING_ERROR)
		snprintf(e->findings[e->n_findings - 1].detail, sizeof(msg), "%s", msg);
	return err;
}

int vcheck_ctx_type(struct venv *e)
{
	const struct ncclbpf_hook_desc *h = e->hook;
	const struct ncclbpf_program *p = e->prog;
	const struct btf_type *fn, *proto, *t;
	const struct btf *btf;
	char got[128];
	uint32_t id, decl;
	int32_t fid;

	if (!h || !h->ctx_type || !(h->ctx_check & NCCLBPF_CTX_CHECK_TYPE) || !p || !p->obj ||
	    !p->obj->btf || !p->name)
		return 0;
	btf = p->obj->btf;
	fid = btf__find_by_name_kind(btf, p->name, BTF_KIND_FUNC);
	if (fid <= 0)
		return 0;
	fn = btf__type_by_id(btf, (uint32_t)fid);
	proto = fn ? btf__type_by_id(btf, fn->type) : NULL;
	if (!proto || !btf_is_func_proto(proto))
		return 0;
	e->ctx_checked = true;
	if (!btf_vlen(proto))
		return 0; /* takes no context: nothing to mismatch */
	id = decl = btf_params(proto)[0].type;
	t = skip(btf, &id, true);
	if (!id || !t || !btf_is_ptr(t)) {
		const struct btf_type *d = skip(btf, &decl, false);

		type_name(btf, decl, d, got, sizeof(got)); /* as declared: __u64, not its base */
		return refuse(e, VM_CTX_UNTYPED,
			      "program %s takes %s, not a pointer; hook %s passes %s * and accepts only that",
			      p->name, got, h->name, h->ctx_type);
	}
	id = t->type;
	t = skip(btf, &id, true);
	type_name(btf, id, t, got, sizeof(got));
	if (!id) {
		if (h->ctx_check & NCCLBPF_CTX_CHECK_VOID_OK)
			return 0;
		return refuse(e, VM_CTX_UNTYPED,
			      "program %s takes void *; hook %s passes %s * and accepts only that",
			      p->name, h->name, h->ctx_type);
	}
	if (strcmp(got, h->ctx_type))
		return refuse(e, VM_CTX_TYPE, "program %s takes %s *; hook %s passes %s *", p->name,
			      got, h->name, h->ctx_type);
	return 0;
}

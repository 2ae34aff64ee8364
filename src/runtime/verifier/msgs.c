/*
 * msgs.c - the message table and the functions that turn a verdict into a
 * finding: reason from the table, detail (instruction and the abstract
 * state of the registers involved), hint, and the source line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../text/disasm.h"
#include "../maps/map.h"
#include "../object.h"
#include "vstate.h"

#define M(id, r, m, h) [id] = { r, m, h }
const struct vmsg_desc nbpf_vmsgs[VM_COUNT] = {
	M(VM_EMPTY, "empty program", "The program has no instructions.",
	  "check the object was built from a non-empty function"),
	M(VM_TOO_LARGE, "program too large", "More instructions than the verifier accepts (1M).",
	  "split the policy into smaller programs"),
	M(VM_BAD_OPCODE, "unknown opcode", "The opcode is not an eBPF v4 instruction the runtime supports.",
	  "rebuild with a supported clang -mcpu (v1..v4)"),
	M(VM_BAD_REG, "invalid register", "A register field names a register above r10.",
	  "the object is corrupt or was not produced by a BPF compiler"),
	M(VM_RESERVED, "reserved field in use", "A field the instruction does not use is nonzero.",
	  "the object is corrupt or was not produced by a BPF compiler"),
	M(VM_WRITE_FP, "write to frame pointer r10", "r10 is read-only.",
	  "copy r10 to another register before adjusting it"),
	M(VM_LDDW_SPLIT, "lddw split or truncated", "A 64-bit immediate load lacks its second slot, or the second slot is not a continuation.",
	  "the object is corrupt"),
	M(VM_LDDW_PSEUDO, "unsupported lddw pseudo source", "lddw with a source other than a plain constant, a map or a map value.",
	  "only maps and global data are supported"),
	M(VM_BAD_MAP, "unknown map index", "lddw refers to a map the object does not define.",
	  "the object is corrupt"),
	M(VM_JUMP_RANGE, "jump out of range", "A jump target lies outside the program.",
	  "the object is corrupt"),
	M(VM_JUMP_LDDW, "jump into the middle of lddw", "A jump targets the second slot of a 64-bit immediate load.",
	  "the object is corrupt"),
	M(VM_JUMP_SUBPROG, "jump out of subprogram", "A jump crosses the boundary of a bpf-to-bpf function.",
	  "the object is corrupt"),
	M(VM_UNREACHABLE, "unreachable instruction", "No path from the entry reaches this instruction.",
	  "remove dead code; the verifier refuses instructions it cannot check"),
	M(VM_FALL_OFF, "program does not end in exit or jump", "Execution could run past the last instruction of a function.",
	  "end every function with return"),
	M(VM_BAD_CALL, "unsupported call", "callx, kfunc calls and calls to invalid targets are refused.",
	  "call helpers by number and functions directly"),
	M(VM_RECURSION, "recursive call", "A bpf-to-bpf function calls itself directly or indirectly.",
	  "rewrite the recursion as a bounded loop"),
	M(VM_CALL_DEPTH, "call chain too deep", "More than 8 nested frames (main program included).",
	  "inline some functions (__always_inline)"),
	M(VM_BAD_SHIFT, "shift amount out of range", "A constant shift by at least the operand width.",
	  "shift by less than 64 (32 for 32-bit operations)"),
	M(VM_UNSUPPORTED, "unsupported instruction", "Legacy packet loads (ABS/IND) and similar instructions.",
	  "policies have no packet; read the context instead"),

	M(VM_UNINIT_REG, "read of uninitialised register", "A register is used before any value was written to it on some path (after a call r1-r5 are clobbered).",
	  "initialise the variable on every path; save values needed after a call in r6-r9"),
	M(VM_PTR_ARITH_NULL, "arithmetic on possibly-null pointer", "Pointer arithmetic on a map lookup or ring buffer reservation result before its null check.",
	  "check the pointer against NULL first"),
	M(VM_PTR_ARITH, "prohibited pointer arithmetic", "Only pointer +/- bounded scalar (64-bit) is allowed on context, stack, map value and ring buffer pointers.",
	  "compute offsets as integers and add them to the pointer"),
	M(VM_PTR_ARITH_UNBOUNDED, "pointer arithmetic with unbounded scalar", "The scalar added to a pointer has no usable bounds (or the offset exceeds 2^29).",
	  "clamp the index first, e.g. if (i >= N) return 0; or i &= N - 1"),
	M(VM_PTR_CMP, "pointer comparison prohibited", "Pointers may only be compared with 0 (null checks).",
	  "compare integers, not addresses"),
	M(VM_PTR_TO_MAP, "pointer stored into map value", "Storing an address into a map (or ring buffer record) would leak it and let it be used later.",
	  "store integers only"),
	M(VM_PTR_TO_CTX, "pointer stored into context", "Context outputs are integers.",
	  "store integers only"),
	M(VM_PTR_RET, "pointer returned from program", "The main program must return an integer.",
	  "return a status code"),
	M(VM_PTR_ARG, "pointer passed as scalar argument", "A helper argument declared as an integer received a pointer.",
	  "pass integers"),
	M(VM_STACK_ESCAPE, "stack pointer escapes its frame", "A pointer to a function's stack would outlive the function (stored into an older frame's stack).",
	  "copy the data instead of the pointer"),

	M(VM_DEREF_SCALAR, "memory access through a non-pointer", "Load or store through a register that holds an integer.",
	  "only dereference context, stack, map value and ring buffer pointers"),
	M(VM_NULL_DEREF, "access through possibly-null pointer", "A map lookup or ring buffer reservation result is dereferenced before its null check.",
	  "check the pointer: if (!p) return 0;"),
	M(VM_DEREF_MAP_PTR, "access through map pointer", "A map itself (not a value) cannot be read or written.",
	  "use bpf_map_lookup_elem to get a value pointer"),
	M(VM_CTX_OOB, "context access out of bounds", "The access lies (partly) outside the hook's context struct.",
	  "use only the fields of the hook's context type"),
	M(VM_CTX_FIELD, "context access not at a declared field", "The access neither lies inside one field nor covers whole adjacent fields at natural alignment (reserved bytes, part of a field, misaligned).",
	  "access declared fields through the context struct"),
	M(VM_CTX_RO, "write to read-only context field", "The field is an input; only the hook's output fields are writable.",
	  "write only the output fields (tuner: algo, proto, n_channels)"),
	M(VM_CTX_WIDTH, "context access width does not match field", "Writes must use the field's exact width; reads at most the field's width at natural alignment.",
	  "access the field with its declared type"),
	M(VM_CTX_VAROFF, "variable-offset context access", "Context fields must be addressed with constant offsets.",
	  "use a switch over the fields instead of an index"),
	M(VM_CTX_ATOMIC, "atomic operation on context", "Atomic read-modify-write of the context is not allowed.",
	  "read the field, compute, then write it"),
	M(VM_CTX_TYPE, "context type does not match hook", "The entry function's first parameter (from the object's BTF) points to another type than the hook's context: the program would read the wrong fields.",
	  "declare the first parameter as a pointer to the hook's context type named in the detail (or move the program to the section of the hook it was written for)"),
	M(VM_CTX_UNTYPED, "untyped context not accepted by hook", "The entry function takes `void *` or a non-pointer, and the hook accepts only its typed context, so the type cannot be checked.",
	  "declare the first parameter as a pointer to the hook's context type named in the detail"),
	M(VM_MAP_OOB, "map value access out of bounds", "The access may reach outside the map value (constant or variable offset).",
	  "check indices against the array length before use"),
	M(VM_MAP_UNBOUNDED, "unbounded variable offset into map value", "The variable part of the offset has no upper or lower bound.",
	  "clamp the index first, e.g. if (i >= N) return 0;"),
	M(VM_RODATA_WRITE, "write to read-only map (.rodata)", "Programs may not write const globals (.rodata) or maps created read-only for programs.",
	  "use a non-const global (.data/.bss) or a map"),
	M(VM_STACK_OOB, "stack access out of bounds", "Stack accesses must lie within the 512-byte frame below r10.",
	  "use fewer or smaller locals, or a per-thread array map as scratch space"),
	M(VM_STACK_UNINIT, "read of uninitialised stack", "Some byte read from the stack was never written on this path.",
	  "initialise locals (e.g. = {}) before reading or passing them to helpers"),
	M(VM_STACK_PTR_SPILL, "misaligned or partial pointer spill", "Pointers may only be stored on the stack as 8 aligned bytes.",
	  "store pointers in 8-byte aligned slots"),
	M(VM_STACK_PTR_FILL, "partial read of spilled pointer", "Part of a spilled pointer was read as an integer.",
	  "read pointers back with 8-byte loads"),
	M(VM_STACK_PTR_REST, "read of partially overwritten spilled pointer", "A store narrower than 8 bytes (or at a variable offset) over a spilled pointer leaves the rest of the address in the slot; those bytes cannot be read (by a load or a helper) until they are written again.",
	  "write all 8 bytes of the slot before reading it as data, or keep data and pointers in separate slots"),
	M(VM_RB_OOB, "ring buffer record access out of bounds", "The access lies outside the reserved record.",
	  "stay within the size passed to bpf_ringbuf_reserve"),
	M(VM_ATOMIC_ALIGN, "misaligned atomic operation", "An atomic operation's address may not be a multiple of its width (a locked access split across cache lines can fault or tear).",
	  "keep atomic counters in naturally aligned __u32/__u64 fields"),

	M(VM_RB_USE_AFTER, "use of ring buffer record after submit or discard", "The record belongs to the consumer once submitted or discarded.",
	  "write every field before bpf_ringbuf_submit"),
	M(VM_RB_LEAK, "ring buffer reservation leaked", "A path exits while a reservation is neither submitted nor discarded.",
	  "call bpf_ringbuf_submit or bpf_ringbuf_discard on every path"),
	M(VM_RB_DOUBLE, "ring buffer record submitted twice", "A record was submitted or discarded more than once.",
	  "release each reservation exactly once"),
	M(VM_RB_NULL, "possibly-null ring buffer record passed to helper", "bpf_ringbuf_reserve can fail; its result must be checked.",
	  "if (!rec) return 0; before using or submitting it"),
	M(VM_RB_TOO_MANY, "too many live ring buffer reservations", "More than 16 reservations held at once.",
	  "submit records before reserving more"),

	M(VM_DIV_ZERO, "division by possibly-zero value", "A divisor (or modulus) may be zero on some path; the ISA defines the result but for a policy it is a bug.",
	  "check the divisor: if (d == 0) ..."),

	M(VM_HELPER_UNKNOWN, "unknown helper", "No helper has this number.",
	  "use the helpers listed in docs/verifier.md"),
	M(VM_HELPER_DENIED, "helper not allowed for this hook", "The hook's contract does not list this helper.",
	  "see the hook's allowed helpers"),
	M(VM_HELPER_ARG, "wrong helper argument type", "An argument does not match the helper's prototype (map, key, value, memory, size, record).",
	  "pass the kind of argument the helper expects"),
	M(VM_HELPER_SIZE, "invalid helper memory or size argument", "A memory argument is not readable and initialised for its full size, or a size is not bounded/constant/positive as required.",
	  "pass a buffer of at least the stated size and a constant or clamped size"),
	M(VM_HELPER_MAP_TYPE, "map type not supported by helper", "E.g. a lookup in a ring buffer or a reservation in an array map.",
	  "use the helper family matching the map type"),
	M(VM_PRINTK_FMT, "invalid bpf_printk format", "A constant bpf_printk format has no NUL within the size passed in r2.",
	  "pass a string literal and its sizeof (bpf_printk does)"),
	M(VM_PRINTK_CONV, "unsupported bpf_printk conversion", "The format uses a conversion the helper does not print: %s and %p (they would read or reveal memory), %n, floating point, %lc, widths above 64.",
	  "print integers with %d, %i, %u, %x, %X or %c (l or ll for 64 bits)"),
	M(VM_PRINTK_ARGS, "bpf_printk argument missing", "The format has more conversions than value arguments set in r3-r5, or more than 3; the helper would print whatever the registers held. A format outside .rodata (on the stack, which the program can write, or not a constant at all) needs all three set.",
	  "pass one argument per conversion, at most 3, and keep formats in .rodata (bpf_printk's default)"),

	M(VM_R0_UNINIT, "r0 not initialised at exit", "A function returns without setting r0.",
	  "return a value on every path"),
	M(VM_RET_RANGE, "return value out of range", "The main program's r0 may lie outside the hook's declared return range.",
	  "return one of the hook's documented values"),
	M(VM_RET_STACK, "function returns pointer to its own stack", "The frame is gone after return.",
	  "return values, or write through a pointer the caller passed"),

	M(VM_LOOP_INFINITE, "infinite loop", "A loop returns to a state it was already in, so it can repeat forever.",
	  "make the loop variable change every iteration and bound it"),
	M(VM_BUDGET_INSNS, "loop not proven to terminate within the instruction budget", "Exploring all paths took more than the budget of processed instructions (default 1M) while a loop was running; the detail names the loop, its back edge and its exit test, which the values the verifier knows never decided: its bound is not proven.",
	  "bound loops by constants (for (i = 0; i < 16 && i < n; i++))"),
	M(VM_LOOP_STATES, "loop not proven to terminate: state budget exhausted", "A loop stored more states than the budget allows (16,384) before its exit test was decided; the detail names the loop.",
	  "bound loops by constants (for (i = 0; i < 16 && i < n; i++))"),
	M(VM_LOOP_BRANCHES, "loop not proven to terminate: too many pending branches", "Every iteration of a loop forked (a branch the bounds cannot decide) until 8,192 paths were waiting; the detail names the loop and its exit test, never decided: its bound is not proven (a Collatz-style `while (n > 1)`).",
	  "bound loops by constants (for (i = 0; i < 16 && i < n; i++))"),
	M(VM_LOOP_WORK, "loop not proven to terminate: work budget exhausted", "A loop used the whole verification work budget (see \"Budgets\") before its exit test was decided; the detail names the loop.",
	  "bound loops by constants (for (i = 0; i < 16 && i < n; i++))"),
	M(VM_BUDGET_INSNS_PATHS, "program too complex: instruction budget exhausted", "Exploring all paths took more than the budget of processed instructions (default 1M) outside any loop: too many paths that cannot be pruned or joined.",
	  "simplify control flow (fewer independent branches, fewer nested calls) or split the program"),
	M(VM_BUDGET_STATES, "program too complex: state budget exhausted", "More abstract states were stored than the budget allows (16,384), outside any loop.",
	  "simplify control flow or split the program"),
	M(VM_BUDGET_BRANCHES, "program too complex: too many pending branches", "The number of unexplored branches exceeded the limit (8,192), outside any loop.",
	  "simplify control flow or split the program"),
	M(VM_BUDGET_WORK, "program too complex: work budget exhausted", "Verification did more work (instructions processed, states copied and compared; see \"Budgets\") than the budget allows: the deterministic bound that decides, the same on every machine and under any load.",
	  "simplify control flow (fewer independent branches, fewer nested calls) or split the program"),
	M(VM_BUDGET_TIME, "verification took too long", "Verification used more CPU time than the time guard allows (default 20 s of the verifying thread's CPU time, `max_time_ms` in the verify options), far above what the work budget costs on any machine near this one's speed: only a machine many times slower, or a bug, reaches it.",
	  "report it: the work budget should have decided first; meanwhile pass a larger max_time_ms"),
	M(VM_OOM, "out of memory during verification", "The verifier could not allocate memory.",
	  "retry with more memory"),

	M(VM_CONSISTENCY, "decision depends on rank-local value", "A decision output (e.g. ctx->algo) is written from, or under a branch on, a value that can differ between ranks (time, random numbers, thread slot, maps some program writes, ring buffer data); ranks could disagree and NCCL would hang.",
	  "decide from the hook's inputs and maps only written from outside (read-only config), or make the data rank-invariant"),
};

const char *vtype_name(uint8_t t)
{
	static const char *const names[] = {
		[VT_NOT_INIT] = "uninit", [VT_SCALAR] = "scalar", [VT_CTX] = "ctx",
		[VT_STACK] = "fp", [VT_MAP_PTR] = "map_ptr", [VT_MAP_VALUE] = "map_value",
		[VT_MAP_VALUE_OR_NULL] = "map_value_or_null", [VT_RINGBUF_MEM] = "ringbuf_mem",
		[VT_RINGBUF_MEM_OR_NULL] = "ringbuf_mem_or_null",
		[VT_RINGBUF_RELEASED] = "ringbuf_mem_released",
	};

	return t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "?";
}

static void fmt_range(char *buf, size_t len, const struct vreg *r)
{
	if (r->smin == r->smax) {
		snprintf(buf, len, "%" PRId64, r->smin);
		return;
	}
	snprintf(buf, len, "smin=%" PRId64 ",smax=%" PRId64 ",umin=%" PRIu64 ",umax=%" PRIu64
		 ",var_off=(0x%" PRIx64 "; 0x%" PRIx64 ")", r->smin, r->smax, r->umin, r->umax,
		 r->var_off.value, r->var_off.mask);
}

/* One register's abstract state, e.g. "map_value(map=cfg,off=8,smin=0,smax=56)". */
int reg_fmt(char *buf, size_t len, const struct venv *e, const struct vreg *r)
{
	char rng[160];
	const struct ncclbpf_map *m;
	const char *taint = (r->taint & TAINT_LOCAL) ? ",rank-local" : "";

	switch (r->type) {
	case VT_NOT_INIT:
		return snprintf(buf, len, "uninit");
	case VT_SCALAR:
		fmt_range(rng, sizeof(rng), r);
		return snprintf(buf, len, "scalar(%s%s)", rng, taint);
	case VT_CTX:
	case VT_STACK:
	case VT_RINGBUF_MEM:
	case VT_RINGBUF_MEM_OR_NULL:
	case VT_RINGBUF_RELEASED:
		fmt_range(rng, sizeof(rng), r);
		if (r->type == VT_STACK)
			return snprintf(buf, len, "fp%u(off=%d,var=%s)", r->frameno, r->off, rng);
		if (r->type == VT_CTX)
			return snprintf(buf, len, "ctx(off=%d,var=%s)", r->off, rng);
		return snprintf(buf, len, "%s(id=%u,size=%u,off=%d,var=%s)", vtype_name(r->type),
				r->id, r->aux, r->off, rng);
	case VT_MAP_PTR:
	case VT_MAP_VALUE:
	case VT_MAP_VALUE_OR_NULL:
		m = venv_map(e, r->aux);
		fmt_range(rng, sizeof(rng), r);
		if (r->type == VT_MAP_PTR)
			return snprintf(buf, len, "map_ptr(map=%s)", m ? m->name : "?");
		return snprintf(buf, len, "%s(map=%s,value_size=%u,off=%d,var=%s%s)",
				vtype_name(r->type), m ? m->name : "?", m ? m->value_size : 0,
				r->off, rng, taint);
	}
	return snprintf(buf, len, "?");
}

int venv_oom(struct venv *e)
{
	e->oom = 1;
	return -ENOMEM;
}

static struct ncclbpf_finding *new_finding(struct venv *e)
{
	struct ncclbpf_finding *f;

	if (e->n_findings == e->cap_findings) {
		uint32_t cap = e->cap_findings ? e->cap_findings * 2 : 4;
		void *p = realloc(e->findings, cap * sizeof(*f));

		if (!p)
			return NULL;
		e->findings = p;
		e->cap_findings = cap;
	}
	f = &e->findings[e->n_findings++];
	memset(f, 0, sizeof(*f));
	return f;
}

/* Source line of pc: the last line-info entry at or before it. */
static void fill_line(const struct venv *e, struct ncclbpf_finding *f, uint32_t pc)
{
	const struct ncclbpf_program *p = e->prog;
	const struct nbpf_line *best = NULL;

	if (!p || !p->lines)
		return;
	for (uint32_t i = 0; i < p->n_lines; i++) {
		if (p->lines[i].insn > pc)
			break;
		best = &p->lines[i];
	}
	if (best && best->line) {
		f->file = best->file;
		f->line = best->line;
		f->src = best->text;
	}
}

static const char *helper_name_cb(void *user, int32_t id)
{
	const struct venv *e = user;
	const struct nbpf_helper *h = e->helper_find ? e->helper_find(id) : NULL;

	return h ? h->name : NULL;
}

static const char *map_name_cb(void *user, uint32_t idx)
{
	const struct ncclbpf_map *m = venv_map(user, idx);

	return m ? m->name : NULL;
}

static void fill_detail(struct venv *e, struct ncclbpf_finding *f, uint32_t pc,
			const uint8_t *regs, const char *extra)
{
	struct nbpf_disasm_opts dopts = { .map_name = map_name_cb,
					  .helper_name = helper_name_cb, .user = e };
	char ins[128] = "", rbuf[256];
	size_t used;

	if (pc < e->n)
		nbpf_disasm_insn_opts(e->insns, e->n, pc, ins, sizeof(ins), &dopts);
	used = (size_t)snprintf(f->detail, sizeof(f->detail), "%s", ins);
	if (extra && *extra && used < sizeof(f->detail))
		used += (size_t)snprintf(f->detail + used, sizeof(f->detail) - used, "%s%s",
					 used ? "; " : "", extra);
	for (int i = 0; regs && i < 4 && regs[i] != 0xff && e->cur && used < sizeof(f->detail); i++) {
		const struct vreg *r = &e->cur->frames[e->cur->nframes - 1].regs[regs[i]];

		reg_fmt(rbuf, sizeof(rbuf), e, r);
		used += (size_t)snprintf(f->detail + used, sizeof(f->detail) - used, "; R%u=%s",
					 regs[i], rbuf);
	}
}

int verr(struct venv *e, uint32_t pc, enum vmsg m, const uint8_t *regs, const char *fmt, ...)
{
	struct ncclbpf_finding *f;
	char extra[256] = "";
	va_list ap;

	if (e->rejected || e->collect) {
		e->rejected = true;
		return -EACCES;
	}
	e->rejected = true;
	f = new_finding(e);
	if (!f) {
		e->oom = 1;
		return -EACCES;
	}
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	f->kind = NCCLBPF_FINDING_ERROR;
	f->insn = pc;
	snprintf(f->reason, sizeof(f->reason), "%s", nbpf_vmsgs[m].reason);
	snprintf(f->hint, sizeof(f->hint), "%s", nbpf_vmsgs[m].hint);
	fill_line(e, f, pc);
	fill_detail(e, f, pc, regs, extra);
	return -EACCES;
}

void vwarn(struct venv *e, uint32_t pc, enum vmsg m, const char *fmt, ...)
{
	struct ncclbpf_finding *f;
	char extra[256] = "";
	va_list ap;

	if (e->collect || pc >= e->n || (e->flags[pc] & IF_WARNED))
		return;
	e->flags[pc] |= IF_WARNED;
	f = new_finding(e);
	if (!f) {
		e->oom = 1;
		return;
	}
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof(extra), fmt, ap);
		va_end(ap);
	}
	f->kind = NCCLBPF_FINDING_WARNING;
	f->insn = pc;
	snprintf(f->reason, sizeof(f->reason), "%s", nbpf_vmsgs[m].reason);
	snprintf(f->hint, sizeof(f->hint), "%s", nbpf_vmsgs[m].hint);
	fill_line(e, f, pc);
	fill_detail(e, f, pc, NULL, extra);
}

// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_kernel.c - the running kernel's verifier as the oracle.
 *
 * Maps of the same shapes as ours are created once; a program's lddw map
 * references (our map indices) become the kernel's descriptors, and the
 * program is loaded as a socket filter, never attached, and closed.  A
 * refusal is loaded again with a log to read the verifier's message (its
 * last line before the statistics).  The strict mode drops CAP_SYS_ADMIN
 * and CAP_PERFMON from this thread's effective set for the load, keeping
 * CAP_BPF: the kernel then refuses pointer leaks and reads of
 * uninitialised stack, as our contract does.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kdiff.h"

#define LOG_SIZE (1u << 20)

struct caps {
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2];
};

static int caps_get(struct caps *c)
{
	c->h.version = _LINUX_CAPABILITY_VERSION_3;
	c->h.pid = 0;
	return (int)syscall(SYS_capget, &c->h, c->d);
}

static int caps_set(struct caps *c)
{
	c->h.version = _LINUX_CAPABILITY_VERSION_3;
	c->h.pid = 0;
	return (int)syscall(SYS_capset, &c->h, c->d);
}

static bool cap_has(const struct caps *c, int cap)
{
	return c->d[cap / 32].effective & (1u << (cap % 32));
}

int kd_kernel_open(struct kd_kernel *k)
{
	struct caps c;
	int err = 0;

	memset(k, 0, sizeof(*k));
	for (int i = 0; i < KD_NMAPS; i++)
		k->fd[i] = -1;
	/* the root verdict needs root's capabilities, the strict one CAP_BPF to keep */
	if (caps_get(&c) || !cap_has(&c, CAP_SYS_ADMIN) || !cap_has(&c, CAP_PERFMON) ||
	    !cap_has(&c, CAP_BPF))
		return -EPERM;
	for (int i = 0; i < KD_NMAPS; i++) {
		const struct kd_map_desc *d = &kd_map_descs[i];
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = d->readonly_prog ? BPF_F_RDONLY_PROG : 0);

		k->fd[i] = bpf_map_create((enum bpf_map_type)d->type, NULL, d->key_size, d->value_size,
					  d->max_entries, &o);
		if (k->fd[i] < 0) {
			err = -errno;
			goto fail;
		}
	}
	k->log_size = LOG_SIZE;
	k->log = malloc(LOG_SIZE);
	if (!k->log) {
		err = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	kd_kernel_close(k);
	return err ? err : -EPERM;
}

void kd_kernel_close(struct kd_kernel *k)
{
	for (int i = 0; i < KD_NMAPS; i++)
		if (k->fd[i] >= 0)
			close(k->fd[i]);
	free(k->log);
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < KD_NMAPS; i++)
		k->fd[i] = -1;
}

/* Our map indices become the kernel's descriptors: src 5 -> BPF_PSEUDO_MAP_FD, 6 -> _VALUE. */
static int translate(const struct kd_kernel *k, const struct kd_prog *p, struct bpf_insn *out)
{
	memcpy(out, p->insns, p->n * sizeof(*out));
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->insns[i].code != NBPF_OP_LDDW || p->insns[i].src == 0)
			continue;
		if ((uint32_t)p->insns[i].imm >= KD_NMAPS)
			return -EINVAL;
		if (p->insns[i].src == NBPF_PSEUDO_MAP_IDX)
			out[i].src_reg = BPF_PSEUDO_MAP_FD;
		else if (p->insns[i].src == NBPF_PSEUDO_MAP_IDX_VALUE)
			out[i].src_reg = BPF_PSEUDO_MAP_VALUE;
		else
			return -EINVAL;
		out[i].imm = k->fd[p->insns[i].imm];
		i++;
	}
	return 0;
}

/* The verifier's message: the last line before "processed N insns" (or the last line). */
static void last_message(const char *log, char *msg, size_t len)
{
	const char *end = log + strlen(log), *best = NULL, *best_end = NULL;

	while (end > log) {
		const char *e = end, *b;

		while (e > log && (e[-1] == '\n' || e[-1] == ' '))
			e--;
		b = e;
		while (b > log && b[-1] != '\n')
			b--;
		if (e == b)
			break;
		if (strncmp(b, "processed ", 10) && strncmp(b, "verification time", 17) &&
		    strncmp(b, "stack depth", 11) && strncmp(b, "mark_precise", 12)) {
			best = b;
			best_end = e;
			break;
		}
		end = b;
	}
	if (!best) {
		snprintf(msg, len, "(no message)");
		return;
	}
	snprintf(msg, len, "%.*s", (int)(best_end - best), best);
}

static void cap_clear(struct caps *c, int cap)
{
	c->d[cap / 32].effective &= ~(1u << (cap % 32));
}

static int load(const struct bpf_insn *insns, uint32_t n, char *log, uint32_t log_size)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log, .log_size = log ? log_size : 0,
		    .log_level = log ? 4 : 0);
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, n, &o);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return -errno;
}

int kd_kernel_verdict(struct kd_kernel *k, const struct kd_prog *p, enum kd_kmode mode, char *msg,
		      size_t msg_len)
{
	struct bpf_insn *insns = malloc(p->n * sizeof(*insns) + 1);
	struct caps saved, lowered;
	int r, err;

	if (msg_len)
		msg[0] = '\0';
	if (!insns)
		return -ENOMEM;
	err = translate(k, p, insns);
	if (err)
		goto out;
	if (mode == KD_K_STRICT) {
		if (caps_get(&saved)) {
			err = -errno;
			goto out;
		}
		lowered = saved;
		cap_clear(&lowered, CAP_SYS_ADMIN);
		cap_clear(&lowered, CAP_PERFMON);
		if (caps_set(&lowered)) {
			err = -errno;
			goto out;
		}
	}
	r = load(insns, p->n, NULL, 0);
	if (r < 0 && msg_len) {
		k->log[0] = '\0';
		load(insns, p->n, k->log, k->log_size);
		last_message(k->log, msg, msg_len);
	}
	if (mode == KD_K_STRICT && caps_set(&saved)) {
		err = -errno; /* the thread could not get its capabilities back: stop */
		goto out;
	}
	err = r == 1 ? 1 : 0;
out:
	free(insns);
	return err;
}

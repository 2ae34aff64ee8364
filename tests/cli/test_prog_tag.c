// SPDX-License-Identifier: MIT
/*
 * Program tags: each program of an object has its own, and it equals the
 * tag the kernel gives the same instructions (bpf_prog_info.tag, what
 * `bpftool prog show` prints; SHA-256 on current kernels, SHA-1 before).  The kernel half needs root and kernel BPF;
 * without them it says it skipped and checks the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <nettle/sha1.h>

#include "check.h"
#include "ncclbpf/runtime.h"

static int silent(enum libbpf_print_level l, const char *f, va_list ap)
{
	(void)l, (void)f, (void)ap;
	return 0;
}

/*
 * Kernels before SHA-256 tags hashed the same bytes with SHA-1: our
 * instructions in the kernel's form, hashed that way, for those.
 */
static void sha1_form_tag(const struct ncclbpf_program *p, char out[17])
{
	size_t n = ncclbpf_program__insn_count(p);
	struct bpf_insn in[4096];
	uint8_t d[SHA1_DIGEST_SIZE];
	struct sha1_ctx c;

	out[0] = 0;
	if (n > 4096)
		return;
	memcpy(in, ncclbpf_program__insns(p), n * sizeof(in[0]));
	for (size_t i = 0; i + 1 < n; i++)
		if (in[i].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			if (in[i].src_reg == 5 || in[i].src_reg == 6)
				in[i].src_reg -= 4; /* our map index forms -> MAP_FD / MAP_VALUE */
			if (in[i].src_reg == BPF_PSEUDO_MAP_FD || in[i].src_reg == BPF_PSEUDO_MAP_VALUE)
				in[i].imm = in[i + 1].imm = 0;
			i++;
		}
	sha1_init(&c);
	sha1_update(&c, n * sizeof(in[0]), (const uint8_t *)in);
	sha1_digest(&c, sizeof(d), d);
	for (int i = 0; i < 8; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* The kernel's tag of program name in path, as hex; -errno when it cannot load. */
static int kernel_tag(const char *path, const char *name, char out[17])
{
	struct bpf_object *o = bpf_object__open_file(path, NULL);
	struct bpf_program *p;
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int err;

	if (!o)
		return -errno;
	bpf_object__for_each_program(p, o)
		bpf_program__set_autoload(p, !strcmp(bpf_program__name(p), name));
	err = bpf_object__load(o);
	if (!err) {
		p = bpf_object__find_program_by_name(o, name);
		err = bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len);
	}
	if (!err)
		for (int i = 0; i < 8; i++)
			sprintf(out + 2 * i, "%02x", info.tag[i]);
	bpf_object__close(o);
	return err;
}

int main(void)
{
	struct ncclbpf_object *obj = NULL;
	char ours[2][17], theirs[17];
	const char *names[2] = { "tag_one", "tag_two" };
	bool skipped = false;

	libbpf_set_print(silent);
	CHECK(ncclbpf_object__open_file(TAG_OBJ, NULL, &obj) == 0);
	if (!obj)
		return check_summary("prog_tag");
	for (int i = 0; i < 2; i++) {
		struct ncclbpf_program *p = ncclbpf_object__find_program(obj, names[i]);

		CHECK(p && ncclbpf_program__tag(p, ours[i]) == 0);
		CHECK(strlen(ours[i]) == 16);
		CHECK(strcmp(ours[i], ncclbpf_object__tag(obj))); /* not the object's hash */
	}
	CHECK_MSG(strcmp(ours[0], ours[1]), "two programs share tag %s", ours[0]);
	for (int i = 0; i < 2 && !skipped; i++) {
		int err = kernel_tag(TAG_OBJ, names[i], theirs);

		if (err) {
			printf("prog_tag: kernel comparison skipped (%s; needs root and kernel BPF)\n",
			       strerror(err < 0 ? -err : err));
			skipped = true;
			break;
		}
		if (strcmp(ours[i], theirs)) {
			char old[17];

			sha1_form_tag(ncclbpf_object__find_program(obj, names[i]), old);
			CHECK_MSG(!strcmp(old, theirs), "%s: ours %s (SHA-1 form %s), kernel %s", names[i],
				  ours[i], old, theirs);
			printf("prog_tag: this kernel hashes tags with SHA-1; instructions agree\n");
		} else {
			CHECK(1);
		}
	}
	ncclbpf_object__close(obj);
	return check_summary("prog_tag");
}

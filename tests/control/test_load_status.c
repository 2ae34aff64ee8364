/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_load_status.c - the host's record of load attempts (ncclbpf/status.h)
 * through both of its readers: the status table the plugin library exports
 * (what `ncclbpf sim` and `bench` use) and the control socket's PS reply
 * (what `ncclbpf ps` shows).  No log text is read: a refused policy is
 * recognised with the plugin's logging switched off.
 *
 * Checks: no attempt before a policy is set; a loaded policy lists its
 * object (name, tag), program (name, hook, engine) and maps; a refused
 * reload names the object, the program and the verifier's message with the
 * source line, and the previous attempt is still there one step back;
 * copies never exceed the size the caller passes; `ncclbpf ps` prints the
 * refusal and `ncclbpf sim` exits 2 with the verifier's message.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "control/ctl_proto.h"
#include "emulator/emu.h"
#include "ncclbpf/status.h"

static const struct emu_topo topo8 = { .n_ranks = 8, .n_nodes = 1 };
static char tmpdir[] = "/tmp/ncclbpf-status-XXXXXX";

static const char *pol(const char *name)
{
	static char buf[4][1024];
	static int i;
	char *b = buf[i++ % 4];

	snprintf(b, 1024, "%s/%s.bpf.o", CTL_BPF_DIR, name);
	return b;
}

/* Runs a shell command; its exit status, and its stdout+stderr in out. */
static int sh(char *out, size_t outlen, const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int st;

	if (!p)
		return -1;
	while (n + 1 < outlen) {
		size_t k = fread(out + n, 1, outlen - 1 - n, p);

		if (!k)
			break;
		n += k;
	}
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const struct nbpf_ctl_rec *find(const struct nbpf_ctl_msg *m, const char *kind, int nth)
{
	for (uint32_t i = 0; i < m->n_recs; i++)
		if (!strcmp(m->recs[i].kind, kind) && nth-- == 0)
			return &m->recs[i];
	return NULL;
}

static const char *get(const struct nbpf_ctl_rec *r, const char *k)
{
	const char *v = r ? nbpf_ctl_rec_get(r, k) : NULL;

	return v ? v : "";
}

/* Without NCCLBPF_POLICY nothing was attempted. */
static void test_no_policy(void)
{
	struct emu_plugin pl;
	struct emu_tuner t;
	struct ncclbpf_load_status st;
	char err[512];

	unsetenv("NCCLBPF_POLICY");
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&t, &pl, 0x1, &topo8, NULL) == 0);
	CHECK(emu_load_status(&pl, 0, &st) == -ENOENT);
	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);
}

static void check_loaded_a(const struct ncclbpf_load_status *st)
{
	CHECK(st->err == 0);
	CHECK_STR_CONTAINS(st->spec, "ctl_a.bpf.o");
	CHECK_EQ_U64(st->n_objs, 1);
	CHECK_EQ_U64(st->n_progs, 1);
	CHECK_EQ_U64(st->n_maps, 2); /* ctl_runs, ctl_cfg */
	CHECK_STR_CONTAINS(st->objs[0].name, "ctl_a");
	CHECK_EQ_U64(strlen(st->objs[0].tag), 16);
	CHECK(!strcmp(st->progs[0].name, "pick_a"));
	CHECK(!strcmp(st->progs[0].hook, "tuner"));
	CHECK(!strcmp(st->progs[0].obj, st->objs[0].name));
	CHECK(st->progs[0].insns > 0);
	CHECK(!strcmp(st->maps[0].name, "ctl_runs") || !strcmp(st->maps[1].name, "ctl_runs"));
	CHECK(st->refused_obj[0] == 0 && st->refused_prog[0] == 0);
	CHECK(st->load_ns > 0 && st->at > 0);
}

int main(void)
{
	struct emu_plugin pl;
	struct emu_tuner t;
	struct ncclbpf_load_status st, older;
	struct nbpf_ctl_buf b = { 0 };
	struct nbpf_ctl_msg m;
	const struct nbpf_ctl_rec *r;
	char err[512], dir[600], cmd[2048], out[8192];
	const char *em;
	int64_t v;

	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(dir, sizeof(dir), "%s/ctl", tmpdir);
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	/* Nothing below may depend on what the plugin logs. */
	setenv("NCCLBPF_LOG", "none", 1);

	test_no_policy();

	setenv("NCCLBPF_POLICY", pol("ctl_a"), 1);
	CHECK(emu_open(&pl, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) == 0);
	CHECK(emu_tuner_init(&t, &pl, 0xabc, &topo8, NULL) == 0);

	/* The policy of the first init, through the exported table. */
	CHECK(emu_load_status(&pl, 0, &st) == 0);
	check_loaded_a(&st);
	CHECK(emu_load_status(&pl, 1, &st) == -ENOENT);
	CHECK(emu_load_status(&pl, NCCLBPF_STATUS_HISTORY, &st) == -ENOENT);

	/* A reload the verifier rejects: recorded with what and why. */
	nbpf_ctl_buf_rec(&b, "reload");
	nbpf_ctl_buf_str(&b, "path", pol("ctl_bad"));
	CHECK(nbpf_ctl_call_pid(getpid(), NBPF_CTL_RELOAD, b.data, &m, &em) == -EACCES);
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);

	CHECK(emu_load_status(&pl, 0, &st) == 0);
	CHECK(st.err == -EACCES);
	CHECK_STR_CONTAINS(st.refused_obj, "ctl_bad.bpf.o");
	CHECK(!strcmp(st.refused_prog, "pick_bad"));
	CHECK_STR_CONTAINS(st.message, "ctl_bad.bpf.c:"); /* the source line */
	CHECK_STR_CONTAINS(st.message, "pick_bad");
	CHECK(st.n_objs == 0 && st.n_progs == 0 && st.n_maps == 0);
	CHECK(emu_load_status(&pl, 1, &older) == 0);
	check_loaded_a(&older);
	CHECK(older.seq + 1 == st.seq);

	/* A missing object: the object, no program. */
	nbpf_ctl_buf_rec(&b, "reload");
	nbpf_ctl_buf_str(&b, "path", "/nonexistent/x.bpf.o");
	CHECK(nbpf_ctl_call_pid(getpid(), NBPF_CTL_RELOAD, b.data, &m, &em) < 0);
	nbpf_ctl_msg_free(&m);
	nbpf_ctl_buf_free(&b);
	CHECK(emu_load_status(&pl, 0, &st) == 0);
	CHECK(st.err < 0 && !strcmp(st.refused_obj, "/nonexistent/x.bpf.o") && !st.refused_prog[0]);

	/* A short copy stays inside the caller's size. */
	memset(&st, 0xa5, sizeof(st));
	{
		const ncclbpf_status_v1_t *tab = dlsym(pl.dl, NCCLBPF_STATUS_SYMBOL_V1);

		CHECK(tab && !strcmp(tab->name, "ncclbpf"));
		CHECK(tab && tab->loadStatus(0, &st, offsetof(struct ncclbpf_load_status, spec)) == 0);
		CHECK(tab && tab->loadStatus(0, NULL, sizeof(st)) == -EINVAL);
	}
	CHECK(st.err < 0);
	CHECK((unsigned char)st.spec[0] == 0xa5 && (unsigned char)st.message[0] == 0xa5);

	/* The same attempts in the PS reply, newest first. */
	CHECK(nbpf_ctl_call_pid(getpid(), NBPF_CTL_PS, NULL, &m, &em) == 0);
	r = find(&m, "load", 0);
	CHECK(!strcmp(get(r, "result"), "refused") && !strcmp(get(r, "obj"), "/nonexistent/x.bpf.o"));
	r = find(&m, "load", 1);
	CHECK(!strcmp(get(r, "result"), "refused") && !strcmp(get(r, "prog"), "pick_bad"));
	CHECK(r && nbpf_ctl_rec_i64(r, "err", &v) == 0 && v == -EACCES);
	CHECK_STR_CONTAINS(get(r, "message"), "ctl_bad.bpf.c:");
	r = find(&m, "load", 2);
	CHECK(!strcmp(get(r, "result"), "loaded") && !strcmp(get(r, "progs"), "1") &&
	      !strcmp(get(r, "maps"), "2"));
	CHECK(find(&m, "load", 3) == NULL);
	nbpf_ctl_msg_free(&m);

	/* What an operator sees. */
	snprintf(cmd, sizeof(cmd), "%s ps %d 2>&1", CTL_CLI, (int)getpid());
	CHECK(sh(out, sizeof(out), cmd) == 0);
	CHECK_STR_CONTAINS(out, "last load refused");
	CHECK_STR_CONTAINS(out, "/nonexistent/x.bpf.o");
	snprintf(cmd, sizeof(cmd), "%s -j ps %d 2>&1", CTL_CLI, (int)getpid());
	CHECK(sh(out, sizeof(out), cmd) == 0);
	CHECK_STR_CONTAINS(out, "\"loads\":[{\"seq\":");

	CHECK(emu_tuner_fini(&t) == 0);
	emu_close(&pl);

	/* sim recognises a rejected policy with the plugin's logging off. */
	snprintf(cmd, sizeof(cmd), "NCCLBPF_LOG=none NCCLBPF_CTL=0 NCCLBPF_PLUGIN=%s %s sim %s 2>&1",
		 EMU_PLUGIN, CTL_CLI, pol("ctl_bad"));
	CHECK(sh(out, sizeof(out), cmd) == 2);
	CHECK_STR_CONTAINS(out, "ctl_bad.bpf.c:");
	CHECK_STR_CONTAINS(out, "pick_bad");

	rmdir(dir);
	rmdir(tmpdir);
	return check_summary("control_load_status");
}

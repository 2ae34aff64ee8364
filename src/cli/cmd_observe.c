// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_observe.c - `ncclbpf observe [--pid P | --cgroup PATH | --comm NAME]
 * [--probes io,net,sched,gpu] [--duration S] [--interval MS] [-j]`: the
 * kernel's view of the job (src/observe) beside the plugin's collective
 * telemetry, per process, every interval.
 *
 * With no target it watches every process running the plugin, found
 * through the control sockets like `ps`; as root it also finds other
 * users' jobs and talks to each socket under its owner's uid, since the
 * plugin serves only its own user.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ncclbpf/runtime.h"

#ifndef NCCLBPF_HAVE_OBSERVE
int cmd_observe(struct cli *c, int argc, char **argv)
{
	(void)c;
	(void)argc;
	(void)argv;
	return cli_err(CLI_NO, "observe: this build has no kernel probes (bpftool or kernel BTF "
			       "were missing when it was built)");
}
#else
#include "observe_cli.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_event(void *ctx, const struct obs_event *e)
{
	struct obs_state *s = ctx;

	if (s->n_ev < sizeof(s->ev) / sizeof(s->ev[0]))
		s->ev[s->n_ev++] = *e;
	else
		s->ev_dropped++;
}

int cmd_observe(struct cli *c, int argc, char **argv)
{
	struct nbpf_obs_opts o = { .mode = OBS_MODE_PIDS };
	struct obs_state s = { .cli = c };
	struct nbpf_obs_snap prev = { 0 };
	struct nbpf_obs *obs = NULL;
	double duration = 0, interval_ms = 1000, t0, t_prev;
	int pid = 0, n_modes = 0, rc = CLI_OK, err, *pids = NULL;
	char *end;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pid") && v) {
			pid = cli_parse_pid(v);
			if (pid <= 0)
				return cli_usage_error("observe: '%s' is not a process id", v);
			n_modes++, i++;
		} else if (!strcmp(a, "--cgroup") && v) {
			o.mode = OBS_MODE_CGROUP, o.cgroup = v;
			n_modes++, i++;
		} else if (!strcmp(a, "--comm") && v) {
			o.mode = OBS_MODE_COMM, o.comm = v;
			n_modes++, i++;
			if (!*v || strlen(v) >= OBS_COMM_LEN)
				return cli_usage_error("observe: --comm takes 1 to 15 characters");
		} else if (!strcmp(a, "--probes") && v) {
			if (nbpf_obs_parse_sets(v, &o.probes))
				return cli_usage_error("observe: %s", ncclbpf_errmsg());
			o.strict = true;
			i++;
		} else if (!strcmp(a, "--duration") && v) {
			duration = strtod(v, &end);
			if (*end || !(duration > 0))
				return cli_usage_error("observe: --duration needs seconds > 0");
			i++;
		} else if (!strcmp(a, "--interval") && v) {
			interval_ms = strtod(v, &end);
			if (*end || !(interval_ms >= 10))
				return cli_usage_error("observe: --interval needs milliseconds >= 10");
			i++;
		} else if (!strcmp(a, "--outlier") && v) {
			double ms = strtod(v, &end);

			if (*end || !(ms > 0))
				return cli_usage_error("observe: --outlier needs milliseconds > 0");
			o.outlier_ns = (uint64_t)(ms * 1e6);
			i++;
		} else if (!strcmp(a, "--btf") && v) {
			o.btf_path = v;
			i++;
		} else {
			return cli_usage_error("observe: unknown argument '%s' (ncclbpf help observe)", a);
		}
	}
	if (n_modes > 1)
		return cli_usage_error("observe: --pid, --cgroup and --comm exclude each other");
	nbpf_obs_opts_env(&o);
	if (pid) {
		if (kill(pid, 0) && errno == ESRCH)
			return cli_err(CLI_NO, "observe: pid %d: no such process", pid);
		obs_proc_add(&s, pid);
	} else if (!n_modes) {
		s.auto_mode = true;
		obs_discover(&s);
		if (!s.n_procs)
			return cli_err(CLI_NO, "observe: no process runs the ncclbpf plugin (see `ncclbpf "
					       "ps`); name one with --pid, --cgroup or --comm");
	}
	if (s.n_procs) {
		pids = calloc(s.n_procs, sizeof(*pids));
		if (!pids) {
			rc = cli_err(CLI_NO, "observe: out of memory");
			goto out;
		}
		for (size_t i = 0; i < s.n_procs; i++)
			pids[i] = s.procs[i].pid;
		o.pids = pids;
		o.n_pids = (int)s.n_procs;
	}
	err = nbpf_obs_open(&o, &obs);
	free(pids);
	if (err) {
		rc = cli_err(CLI_NO, "observe: %s", ncclbpf_errmsg());
		goto out;
	}
	obs_print_status(obs, stderr);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = t_prev = mono_s();
	for (int iter = 1; !stop_flag; iter++) {
		double deadline = t_prev + interval_ms / 1000, now, secs;
		struct nbpf_obs_snap snap, d;

		if (duration && deadline > t0 + duration)
			deadline = t0 + duration;
		s.n_ev = 0;
		s.ev_dropped = 0;
		/* Outliers arrive while we wait for the end of the interval. */
		while (!stop_flag && (now = mono_s()) < deadline) {
			int ms = (int)((deadline - now) * 1000) + 1;

			if (nbpf_obs_poll(obs, ms > 100 ? 100 : ms, on_event, &s) < 0)
				break;
		}
		now = mono_s();
		secs = now - t_prev;
		t_prev = now;
		if ((err = nbpf_obs_snapshot(obs, &snap))) {
			rc = cli_err(CLI_NO, "observe: %s", ncclbpf_errmsg());
			break;
		}
		if ((err = nbpf_obs_snap_delta(&d, &snap, iter == 1 ? NULL : &prev))) {
			nbpf_obs_snap_free(&snap);
			rc = CLI_NO;
			break;
		}
		nbpf_obs_snap_free(&prev);
		prev = snap;
		if (s.auto_mode) {
			size_t before;

			/* Jobs that ended leave the table and the kernel's target set. */
			for (size_t i = 0; i < s.n_procs;) {
				if (kill(s.procs[i].pid, 0) && errno == ESRCH) {
					nbpf_obs_del_pid(obs, s.procs[i].pid);
					nbpf_tele_free(&s.procs[i].tele_prev);
					s.procs[i] = s.procs[--s.n_procs];
				} else {
					i++;
				}
			}
			before = s.n_procs;

			/* Jobs that started meanwhile join the target table. */
			obs_discover(&s);
			for (size_t i = before; i < s.n_procs; i++)
				nbpf_obs_add_pid(obs, s.procs[i].pid);
		}
		if (o.mode != OBS_MODE_PIDS)
			obs_procs_from_snap(&s, &d);
		for (size_t i = 0; i < s.n_procs; i++)
			obs_proc_nccl(&s.procs[i]);
		if (c->json)
			obs_print_json(&s, obs, &d, secs, iter);
		else
			obs_print_table(&s, &d, secs, iter);
		nbpf_obs_snap_free(&d);
		if (duration && now - t0 >= duration - 1e-3)
			break;
	}
out:
	nbpf_obs_snap_free(&prev);
	nbpf_obs_close(obs);
	for (size_t i = 0; i < s.n_procs; i++)
		nbpf_tele_free(&s.procs[i].tele_prev);
	free(s.procs);
	return rc;
}
#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_observe.c - `ncclbpf observe [--pid P | --cgroup PATH | --comm NAME]
 * [--probes io,net,sched,gpu] [--duration S] [--interval MS] [-j]
 * [--pin-numa auto|NODE [--repin-rate N] | --no-repin]`: the kernel's view
 * of the job (src/observe) beside the plugin's collective telemetry, per
 * process, every interval; with --pin-numa, closed loop 3: threads that
 * migrated off their home NUMA node are moved back (observe_repin.c).
 *
 * With no target it watches every process running the plugin, found
 * through the control sockets like `ps`; as root it also finds other
 * users' jobs and talks to each socket under its owner's uid, since the
 * plugin serves only its own user.
 */
#include <errno.h>
#include <inttypes.h>
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

	if (e->kind == OBS_EV_NUMA) {
		/* A signal for the re-pinner, not an outlier to show. */
		obs_repin_event(s, e, mono_s());
		return;
	}
	if (s->n_ev < sizeof(s->ev) / sizeof(s->ev[0]))
		s->ev[s->n_ev++] = *e;
	else
		s->ev_dropped++;
}

/*
 * The re-pinner over the sched set's NUMA table, and its first scan, so
 * every thread that exists now has its home before the first event.
 */
static int repin_open(struct obs_state *s, struct nbpf_obs *obs, int home, double rate)
{
	struct nbpf_repin_opts ro = { .home_node = home, .max_per_s = rate };
	static int node[OBS_MAX_CPUS];
	int n = nbpf_obs_numa_table(obs, node, OBS_MAX_CPUS), err;

	if (n < 0)
		return n;
	if ((err = nbpf_repin_new(node, n, &ro, &s->repin)))
		return err;
	obs_repin_scan(s, mono_s());
	if (home >= 0)
		fprintf(stderr, "numa re-pin: on, home node %d, at most %g moves/s, %" PRIu64
				" threads\n", home, rate, nbpf_repin_stats(s->repin)->tracked);
	else
		fprintf(stderr, "numa re-pin: on, home = first node seen, at most %g moves/s, %"
				PRIu64 " threads\n", rate, nbpf_repin_stats(s->repin)->tracked);
	return 0;
}

/* --deep-when SIGNAL=MS: the deep tier's condition, over all watched processes. */
struct deep_rule {
	bool set;
	bool runq;         /* runq-p99, else block-p99 */
	double bound_ns;
	double window_s;
	uint64_t budget;
	double until;      /* mono_s() when the current window ends; 0: off */
};

static int deep_parse(struct deep_rule *r, const char *v)
{
	const char *eq = strchr(v, '=');
	char *end;

	if (!eq)
		return -1;
	if (!strncmp(v, "runq-p99=", 9))
		r->runq = true;
	else if (strncmp(v, "block-p99=", 10))
		return -1;
	r->bound_ns = strtod(eq + 1, &end) * 1e6;
	if (*end || !(r->bound_ns > 0))
		return -1;
	r->set = true;
	return 0;
}

/*
 * Once per interval: while the condition holds the deep tier's window is
 * pushed out to now + window (the kernel switches it off at that deadline
 * by itself, so a stalled or killed observe never leaves it on).
 */
static void deep_step(struct deep_rule *r, struct nbpf_obs *obs, const struct nbpf_obs_snap *d,
		      double now)
{
	struct obs_hist h = { 0 };
	double p99;

	for (size_t k = 0; r->runq && k < d->n_sched; k++)
		for (int z = 0; z < OBS_HIST_SLOTS; z++)
			h.slot[z] += d->sched[k].v.runq.slot[z], h.count += d->sched[k].v.runq.slot[z];
	for (size_t k = 0; !r->runq && k < d->n_blk; k++)
		for (int z = 0; z < OBS_HIST_SLOTS; z++)
			h.slot[z] += d->blk[k].v.lat.slot[z], h.count += d->blk[k].v.lat.slot[z];
	p99 = nbpf_obs_hist_quantile(&h, 0.99);
	if (p99 > r->bound_ns) {
		if (!r->until)
			fprintf(stderr, "deep tier: on (%s p99 %.3f ms > %.3f ms), %g s, at most %" PRIu64
					" records/s\n", r->runq ? "runq" : "block", p99 / 1e6,
				r->bound_ns / 1e6, r->window_s, r->budget);
		r->until = now + r->window_s;
		if (nbpf_obs_deep(obs, (uint64_t)(r->until * 1e9), r->budget))
			fprintf(stderr, "deep tier: %s\n", ncclbpf_errmsg());
	} else if (r->until && now >= r->until) {
		r->until = 0;
		fprintf(stderr, "deep tier: off (%s p99 %.3f ms)\n", r->runq ? "runq" : "block",
			p99 / 1e6);
	}
}

/*
 * Once per interval, before the sample is printed: children the job forked
 * (the kernel's target table: pid and comm targets), plugin processes that
 * started (no target), processes the kernel's tables name (cgroup, comm);
 * names read again (an exec renames); the plugin's sockets and ranks for
 * all of them; and the processes that exited, to be reported in this
 * sample and dropped after it.
 */
static void procs_update(struct obs_state *s, struct nbpf_obs *obs, enum obs_mode mode,
			 const struct nbpf_obs_snap *d)
{
	static int pids[4096];
	size_t before;
	int n;

	s->n_exited = 0;
	for (size_t i = 0; i < s->n_procs; i++) {
		if (!obs_proc_gone(s->procs[i].pid))
			obs_proc_refresh(&s->procs[i]);
		else if (s->n_exited < sizeof(s->exited) / sizeof(s->exited[0]))
			s->exited[s->n_exited++] = s->procs[i].pid;
	}
	n = mode == OBS_MODE_CGROUP ? 0 : nbpf_obs_targets(obs, pids, 4096);
	for (int i = 0; i < n && i < 4096; i++) {
		if (obs_proc_find(s, pids[i]))
			continue;
		/* A child that came and went between two samples: its pid may be reused. */
		if (obs_proc_gone(pids[i]))
			nbpf_obs_del_pid(obs, pids[i]);
		/* add_pid again: a process watched by pid gets its own CUDA uprobes. */
		else if (obs_proc_add(s, pids[i]))
			nbpf_obs_add_pid(obs, pids[i]);
	}
	if (s->auto_mode) {
		before = s->n_procs;
		obs_discover(s);
		for (size_t i = before; i < s->n_procs; i++)
			nbpf_obs_add_pid(obs, s->procs[i].pid);
	}
	if (mode != OBS_MODE_PIDS)
		obs_procs_from_snap(s, d);
	obs_join_plugins(s);
	for (size_t i = 0; i < s->n_procs; i++) {
		struct proc *p = &s->procs[i];

		if (p->sock[0])
			obs_proc_labels(p);
		/* numa_maps walks the page tables: every 5 s is enough for where memory sits. */
		if (!p->mem_read_s || mono_s() - p->mem_read_s >= 5) {
			p->mem_nodes = nbpf_obs_numa_mem(p->pid, p->mem, OBS_NUMA_NODES);
			p->mem_read_s = mono_s();
		}
	}
}

/* The processes reported as exited leave the table and the kernel's target set. */
static void procs_drop_exited(struct obs_state *s, struct nbpf_obs *obs)
{
	for (size_t k = 0; k < s->n_exited; k++) {
		struct proc *p = obs_proc_find(s, s->exited[k]);

		nbpf_obs_del_pid(obs, s->exited[k]);
		if (!p)
			continue;
		nbpf_tele_free(&p->tele_prev);
		*p = s->procs[--s->n_procs];
	}
	s->n_exited = 0;
}

int cmd_observe(struct cli *c, int argc, char **argv)
{
	struct nbpf_obs_opts o = { .mode = OBS_MODE_PIDS };
	struct obs_state s = { .cli = c };
	struct nbpf_obs_snap prev = { 0 };
	struct nbpf_obs *obs = NULL;
	double duration = 0, interval_ms = 1000, t0, t_prev, repin_rate = 10;
	int pid = 0, n_modes = 0, rc = CLI_OK, err, *pids = NULL, home = -1;
	bool pin_numa = false, no_repin = false;
	struct deep_rule deep = { .window_s = 10, .budget = 1000 };
	struct obs_deep_hook hook = { 0 };
	const char *deep_listen = NULL;
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
		} else if (!strcmp(a, "--pin-numa") && v) {
			if (strcmp(v, "auto")) {
				long n = strtol(v, &end, 10);

				if (*end || n < 0 || n >= OBS_MAX_CPUS)
					return cli_usage_error("observe: --pin-numa takes auto or a node number");
				home = (int)n;
			}
			pin_numa = true;
			i++;
		} else if (!strcmp(a, "--repin-rate") && v) {
			repin_rate = strtod(v, &end);
			if (*end || !(repin_rate > 0))
				return cli_usage_error("observe: --repin-rate needs moves per second > 0");
			i++;
		} else if (!strcmp(a, "--deep-when") && v) {
			if (deep_parse(&deep, v))
				return cli_usage_error("observe: --deep-when takes runq-p99=MS or block-p99=MS");
			i++;
		} else if (!strcmp(a, "--deep-window") && v) {
			deep.window_s = strtod(v, &end);
			if (*end || !(deep.window_s > 0))
				return cli_usage_error("observe: --deep-window needs seconds > 0");
			i++;
		} else if (!strcmp(a, "--deep-budget") && v) {
			long long n = strtoll(v, &end, 10);

			if (*end || n <= 0)
				return cli_usage_error("observe: --deep-budget needs records per second > 0");
			deep.budget = (uint64_t)n;
			i++;
		} else if (!strcmp(a, "--deep-listen") && v) {
			deep_listen = v;
			i++;
		} else if (!strcmp(a, "--no-repin")) {
			no_repin = true;
		} else if (!strcmp(a, "--btf") && v) {
			o.btf_path = v;
			i++;
		} else {
			return cli_usage_error("observe: unknown argument '%s' (ncclbpf help observe)", a);
		}
	}
	if (n_modes > 1)
		return cli_usage_error("observe: --pid, --cgroup and --comm exclude each other");
	pin_numa = pin_numa && !no_repin;
	if (pin_numa && o.probes && !(o.probes & (1u << NBPF_OBS_SCHED)))
		return cli_usage_error("observe: --pin-numa needs the sched probe set");
	o.numa_events = pin_numa;
	o.deep = deep.set || deep_listen;
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
	if (deep_listen) {
		hook.window_s = deep.window_s;
		hook.budget = deep.budget;
		if (obs_deep_hook_listen(&hook, deep_listen)) {
			rc = cli_err(CLI_NO, "observe: --deep-listen %s: want IPv4:PORT, free to bind",
				     deep_listen);
			goto out;
		}
		fprintf(stderr, "ncclbpf: observe: deep tier on an alert: POST Alertmanager webhooks to "
				"http://%s/deep\n", deep_listen);
	}
	if (pin_numa && (err = repin_open(&s, obs, home, repin_rate))) {
		rc = cli_err(CLI_NO, "observe: %s", ncclbpf_errmsg());
		goto out;
	}
	/*
	 * The starting point of the first interval: connections that exist now
	 * carry the kernel's counts since they opened.
	 */
	if ((err = nbpf_obs_snapshot(obs, &prev))) {
		rc = cli_err(CLI_NO, "observe: %s", ncclbpf_errmsg());
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = t_prev = mono_s();
	/* Under -j: a document per sample, one per line. */
	cli_json_stream(c);
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
			if (hook.daemon)
				obs_deep_hook_apply(&hook, obs);
		}
		now = mono_s();
		secs = now - t_prev;
		t_prev = now;
		if ((err = nbpf_obs_snapshot(obs, &snap))) {
			rc = cli_err(CLI_NO, "observe: %s", ncclbpf_errmsg());
			break;
		}
		if ((err = nbpf_obs_snap_delta(&d, &snap, &prev))) {
			nbpf_obs_snap_free(&snap);
			rc = CLI_NO;
			break;
		}
		nbpf_obs_snap_free(&prev);
		prev = snap;
		procs_update(&s, obs, o.mode, &d);
		obs_repin_scan(&s, mono_s());
		if ((s.deep = deep.set || hook.daemon)) {
			if (deep.set)
				deep_step(&deep, obs, &d, now);
			s.deep_on = deep.until > 0 || hook.until > 0;
		}
		for (size_t i = 0; i < s.n_procs; i++)
			obs_proc_nccl(&s.procs[i]);
		if (c->json)
			obs_print_json(&s, obs, &d, secs, iter);
		else
			obs_print_table(&s, &d, secs, iter);
		if (!c->json && s.deep) {
			uint64_t sent = 0, dropped = 0;

			nbpf_obs_deep_stats(obs, &sent, &dropped);
			printf("deep tier  %s  records sent %" PRIu64 "  dropped over budget %" PRIu64 "\n",
			       s.deep_on ? "on" : "off", sent, dropped);
		}
		nbpf_obs_snap_free(&d);
		procs_drop_exited(&s, obs);
		if (duration && now - t0 >= duration - 1e-3)
			break;
		if (pid && !s.n_procs) {
			fprintf(stderr, "ncclbpf: observe: every watched process exited\n");
			break;
		}
	}
out:
	obs_deep_hook_close(&hook);
	nbpf_repin_free(s.repin);
	nbpf_obs_snap_free(&prev);
	nbpf_obs_close(obs);
	for (size_t i = 0; i < s.n_procs; i++)
		nbpf_tele_free(&s.procs[i].tele_prev);
	free(s.procs);
	return rc;
}
#endif

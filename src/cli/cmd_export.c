/*
 * cmd_export.c - `ncclbpf export [--listen ADDR:PORT | --textfile PATH]
 * [--interval S] [--count N] [PID...]`: Prometheus text exposition of the
 * telemetry of every process running the plugin (src/telemetry/prom.c).
 *
 *   (neither)   print the exposition to stdout (count times, default once)
 *   --textfile  node_exporter's textfile collector: written to a temporary
 *               file in the same directory, then renamed over PATH, so a
 *               scrape never reads a half-written file (count times,
 *               default forever, every interval seconds); a failed write
 *               (ENOSPC...) keeps the old file and is retried next interval
 *   --listen    serve GET /metrics over HTTP with libmicrohttpd; each scrape
 *               collects afresh; exits after count scrapes (default never);
 *               other methods get 405
 *   --alert-webhook  POST threshold alerts to URL (export_alert.c)
 *
 * Besides the plugin's own families, every map a process's policy declares
 * with NCCLBPF_EXPORT is exported (export_maps.c).  With --observe SETS the
 * kernel probe sets named (src/observe) are attached to the same processes
 * and their series join the exposition.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "control/ctl_client.h"
#include "control/ctl_tele.h"
#include "telemetry/prom_maps.h"
#include "export_alert.h"

/* --alert-webhook: thresholds checked on every collection (export_alert.c). */
static struct export_alerts *g_alerts;

static void alert_poll(const int *pids, int n_pids)
{
	struct nbpf_tele_set s = { 0 };

	if (g_alerts && cli_tele_collect(pids, n_pids, &s, NULL) >= 0)
		export_alert_tick(g_alerts, &s);
	nbpf_tele_free(&s);
}
#ifdef NCCLBPF_HAVE_OBSERVE
#include "ncclbpf/runtime.h"
#include "observe_cli.h"

/* The kernel-side session, when --observe asked for one. */
static struct nbpf_obs *g_obs;
/* With --observe and no pids: the plugin processes, every user's when root. */
static struct obs_state g_procs;

/*
 * Observe series carry the process's pid and name, and for plugin
 * processes its ranks ("rank/ranks@communicator,..."), the join key with
 * the collective series; the collective series carry no pid.
 */
static const char *obs_labels(void *ctx, uint32_t tgid)
{
	static char buf[512];
	struct proc *p = obs_proc_find(&g_procs, (int)tgid);
	char path[64], comm[32] = "?";
	size_t k;
	FILE *f;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	for (char *c = comm; *c; c++)
		if (*c == '"' || *c == '\\')
			*c = '_';
	k = (size_t)snprintf(buf, sizeof(buf), "pid=\"%u\",process=\"%s\"", tgid, comm);
	if (p && p->ranks[0] && k < sizeof(buf))
		snprintf(buf + k, sizeof(buf) - k, ",ranks=\"%s\"", p->ranks);
	return buf;
}

/* The deep tier, switched by Alertmanager through POST /deep; its records to --deep-log. */
static struct obs_deep_hook g_hook = { .window_s = 10, .budget = 1000 };
static FILE *g_deep_log;

static void deep_record(void *ctx, const struct obs_event *e)
{
	(void)ctx;
	if (g_deep_log && e->kind != OBS_EV_NUMA)
		fprintf(g_deep_log, "{\"ts_ns\":%llu,\"kind\":\"%s\",\"pid\":%u,\"tid\":%u,"
			"\"value_ns\":%llu}\n", (unsigned long long)e->ts_ns, obs_event_kind_name(e->kind),
			e->tgid, e->tid, (unsigned long long)e->value_ns);
}

/* Each tick of the listen loop: a webhook's request applied, the records drained. */
static void deep_tick(void)
{
	if (!g_obs)
		return;
	obs_deep_hook_apply(&g_hook, g_obs);
	nbpf_obs_poll(g_obs, 0, deep_record, NULL);
	if (g_deep_log)
		fflush(g_deep_log);
}

/* Collective telemetry of the discovered processes, each asked under its owner's uid. */
static void tele_from_procs(struct nbpf_tele_set *s)
{
	for (size_t i = 0; i < g_procs.n_procs; i++) {
		struct nbpf_ctl_msg m;

		if (!obs_proc_call(&g_procs.procs[i], NBPF_CTL_TELEMETRY, &m))
			cli_tele_merge(s, &m);
		nbpf_ctl_msg_free(&m);
	}
}
#endif

struct export_ctx {
	const int *pids;
	int n_pids;
	_Atomic int scrapes;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* Renders one exposition into a malloc'ed buffer; NULL on failure. */
static char *render(const int *pids, int n_pids, size_t *len)
{
	struct nbpf_tele_set s = { 0 };
	struct nbpf_export_set ms = { 0 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int err;

	if (!f)
		return NULL;
#ifdef NCCLBPF_HAVE_OBSERVE
	if (g_procs.n_procs)
		tele_from_procs(&s);
	else
#endif
	if (cli_tele_collect(pids, n_pids, &s, NULL) < 0)
		s.processes = 0;
	cli_export_policy_maps(&ms, pids, n_pids);
	err = nbpf_prom_write(f, &s);
	if (!err)
		err = nbpf_export_write(f, &ms);
#ifdef NCCLBPF_HAVE_OBSERVE
	if (!err && g_obs) {
		struct nbpf_obs_snap os;
		uint64_t sent = 0, dropped = 0;

		if (!nbpf_obs_snapshot(g_obs, &os)) {
			err = nbpf_obs_prom_write(f, &os, obs_labels, NULL);
			nbpf_obs_snap_free(&os);
		}
		if (!err && !nbpf_obs_deep_stats(g_obs, &sent, &dropped))
			fprintf(f, "# HELP ncclbpf_observe_deep_records_total Deep-tier records sent to the "
				   "ring, and dropped over the budget.\n# TYPE ncclbpf_observe_deep_records_total "
				   "counter\nncclbpf_observe_deep_records_total{outcome=\"sent\"} %llu\n"
				   "ncclbpf_observe_deep_records_total{outcome=\"dropped\"} %llu\n",
				(unsigned long long)sent, (unsigned long long)dropped);
	}
#endif
	nbpf_tele_free(&s);
	nbpf_export_free(&ms);
	if (fclose(f) || err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_textfile(const char *path, const int *pids, int n_pids)
{
	size_t len = 0;
	char *buf = render(pids, n_pids, &len), *tmp = NULL;
	int fd = -1, err = 0;

	if (!buf)
		return -ENOMEM;
	/* Same directory as the target, so the rename is atomic. */
	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		free(buf);
		return -ENOMEM;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, 0644) || fsync(fd) || close(fd)) {
		fd = -1;
		err = -errno;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path))
		err = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	free(tmp);
	free(buf);
	return err;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version, const char *upload,
			     size_t *upload_size, void **con_cls)
{
	struct export_ctx *ctx = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len = 0;
	char *body;

#ifdef NCCLBPF_HAVE_OBSERVE
	if (g_obs && !strcmp(method, "POST") && !strcmp(url, "/deep"))
		return obs_deep_hook_serve(&g_hook, conn, upload, upload_size, con_cls);
#endif
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char na[] = "method not allowed: GET or HEAD\n";

		resp = MHD_create_response_from_buffer(sizeof(na) - 1, (void *)na,
						       MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, "Allow", "GET, HEAD");
		ret = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		static const char nf[] = "not found: try /metrics\n";

		resp = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						       MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	body = render(ctx->pids, ctx->n_pids, &len);
	if (!body)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	atomic_fetch_add(&ctx->scrapes, 1);
	return ret;
}

/*
 * Connections the listener holds at once.  Each slow client (a slowloris,
 * a stuck scraper) keeps one until it goes quiet for the timeout, so a
 * small table is easy to fill and then no scrape gets in: allow what the
 * descriptor limit allows (raised to its hard maximum), up to 4096, and
 * poll them with epoll, which has no FD_SETSIZE ceiling.
 */
static unsigned int conn_limit(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 256;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Room for the control sockets and map files a render opens. */
	n = rl.rlim_cur > 320 ? rl.rlim_cur - 64 : 256;
	return n > 4096 ? 4096 : (unsigned int)n;
}

static int parse_listen(const char *s, struct sockaddr_in *sa)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	long port;
	char *end;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (!host[0] || !strcmp(host, "*"))
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

static int export_run(const struct cli *c, const char *listen, const char *textfile,
		      double interval, int count, const int *pids, int n_pids);

/* What is wrong with an argument export did not take. */
static int arg_error(const char *a)
{
	static const char *const with_value[] = { "--listen", "--textfile", "--interval", "--count",
						  "--observe", "--alert-webhook", "--alert-p99" };

	for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (!strcmp(a, with_value[i]))
			return cli_usage_error("export: option '%s' needs a value", a);
	if (a[0] == '-')
		return cli_usage_error("export: unknown option '%s' (ncclbpf help export)", a);
	return cli_usage_error("export: '%s' is not a process id (at most 64)", a);
}

int cmd_export(struct cli *c, int argc, char **argv)
{
	const char *listen = NULL, *textfile = NULL, *observe = NULL, *deep_log = NULL;
	double deep_window = 10, deep_budget = 1000, outlier_ms = 0;
	static struct export_alerts alerts;
	double interval = 15;
	int count = -1, pids[64], n_pids = 0;
	char *end;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
			listen = argv[++i];
		} else if (!strcmp(argv[i], "--alert-webhook") && i + 1 < argc) {
			alerts.url = argv[++i];
			g_alerts = &alerts;
		} else if (!strcmp(argv[i], "--alert-p99") && i + 1 < argc) {
			if (export_alert_parse_p99(&alerts, argv[++i]))
				return cli_usage_error("--alert-p99 wants SIZE=SECONDS,... with sizes 1K 16K 256K 4M 64M 1G inf");
		} else if (!strcmp(argv[i], "--alert-refused")) {
			alerts.refused = true;
		} else if (!strcmp(argv[i], "--observe") && i + 1 < argc) {
			observe = argv[++i];
		} else if (!strcmp(argv[i], "--outlier") && i + 1 < argc) {
			outlier_ms = strtod(argv[++i], &end);
			if (*end || !(outlier_ms > 0))
				return cli_usage_error("--outlier needs milliseconds > 0");
		} else if (!strcmp(argv[i], "--deep-log") && i + 1 < argc) {
			deep_log = argv[++i];
		} else if (!strcmp(argv[i], "--deep-window") && i + 1 < argc) {
			deep_window = strtod(argv[++i], &end);
			if (*end || !(deep_window > 0))
				return cli_usage_error("--deep-window needs seconds > 0");
		} else if (!strcmp(argv[i], "--deep-budget") && i + 1 < argc) {
			deep_budget = strtod(argv[++i], &end);
			if (*end || !(deep_budget >= 1))
				return cli_usage_error("--deep-budget needs records per second >= 1");
		} else if (!strcmp(argv[i], "--textfile") && i + 1 < argc) {
			textfile = argv[++i];
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			interval = strtod(argv[++i], &end);
			if (*end || !(interval > 0) || interval > 86400)
				return cli_usage_error("export: --interval: expected seconds > 0 (at most 86400), got '%s'",
						       argv[i]);
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = (int)strtol(argv[++i], &end, 10);
			if (*end || count <= 0)
				return cli_usage_error("export: --count: expected a positive number, got '%s'",
						       argv[i]);
		} else if (cli_parse_pid(argv[i]) > 0 && n_pids < 64) {
			pids[n_pids++] = cli_parse_pid(argv[i]);
		} else {
			return arg_error(argv[i]);
		}
	}
	if (listen && textfile)
		return cli_usage_error("--listen and --textfile exclude each other");
	if (g_alerts && strncmp(alerts.url, "http://", 7))
		return cli_usage_error("--alert-webhook wants an http:// URL");
	/*
	 * A named process that runs no plugin is an error, never an export of
	 * nothing; with --observe any process can be named (a data loader).
	 */
	if (!observe && cli_check_pids(pids, n_pids))
		return CLI_NO;
	if (observe) {
#ifdef NCCLBPF_HAVE_OBSERVE
		/* The deep tier is switched through the listener's POST /deep. */
		struct nbpf_obs_opts o = { .mode = OBS_MODE_PIDS, .strict = true, .deep = listen != NULL,
					   .outlier_ns = (uint64_t)(outlier_ms * 1e6) };
		int *targets = NULL, n = n_pids, rc;

		if (nbpf_obs_parse_sets(observe, &o.probes))
			return cli_usage_error("export: %s", ncclbpf_errmsg());
		if (!n_pids) {
			obs_discover(&g_procs);
			n = (int)g_procs.n_procs;
			if (!n)
				return cli_err(CLI_NO, "export --observe: no process runs the plugin; name pids");
			targets = calloc((size_t)n, sizeof(*targets));
			for (int i = 0; targets && i < n; i++)
				targets[i] = g_procs.procs[i].pid;
		}
		/* Given pids too: those running the plugin get their ranks label (the join key). */
		for (int i = 0; i < n_pids; i++)
			obs_proc_add(&g_procs, pids[i]);
		obs_join_plugins(&g_procs);
		o.pids = n_pids ? pids : targets;
		o.n_pids = o.pids ? n : 0;
		nbpf_obs_opts_env(&o);
		rc = nbpf_obs_open(&o, &g_obs);
		free(targets);
		g_hook.window_s = deep_window;
		g_hook.budget = (uint64_t)deep_budget;
		if (!rc && deep_log && !(g_deep_log = fopen(deep_log, "a")))
			rc = cli_err(CLI_NO, "export: --deep-log %s: %s", deep_log, strerror(errno));
		else if (rc)
			rc = -1;
		if (rc == -1)
			rc = cli_err(CLI_NO, "export --observe: %s", ncclbpf_errmsg());
		else if (!rc)
			rc = export_run(c, listen, textfile, interval, count, pids, n_pids);
		nbpf_obs_close(g_obs);
		g_obs = NULL;
		if (g_deep_log)
			fclose(g_deep_log);
		g_deep_log = NULL;
		for (size_t i = 0; i < g_procs.n_procs; i++)
			nbpf_tele_free(&g_procs.procs[i].tele_prev);
		free(g_procs.procs);
		memset(&g_procs, 0, sizeof(g_procs));
		return rc;
#else
		return cli_err(CLI_NO, "export --observe: this build has no kernel probes");
#endif
	}
	return export_run(c, listen, textfile, interval, count, pids, n_pids);
}

/* Replaces the exposition in *buf with its JSON document (export -j); 0 or -1. */
static int to_json(char **buf, size_t *len)
{
	char *json = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&json, &n);
	int err = !f || cli_prom_json(f, *buf);

	if (f && fclose(f))
		err = 1;
	if (err) {
		free(json);
		return -1;
	}
	free(*buf);
	*buf = json;
	*len = n;
	return 0;
}

static int export_run(const struct cli *c, const char *listen, const char *textfile,
		      double interval, int count, const int *pids, int n_pids)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (listen) {
		struct export_ctx ctx = { .pids = pids, .n_pids = n_pids };
		const union MHD_DaemonInfo *bi;
		char host[INET_ADDRSTRLEN] = "?";
		struct sockaddr_in sa;
		struct MHD_Daemon *d;
		unsigned int port;

		if (parse_listen(listen, &sa))
			return cli_usage_error("--listen wants ADDR:PORT, e.g. 127.0.0.1:9464");
		d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG,
				     ntohs(sa.sin_port), NULL, NULL, serve, &ctx,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				     MHD_OPTION_CONNECTION_LIMIT, conn_limit(),
#ifdef NCCLBPF_HAVE_OBSERVE
				     MHD_OPTION_NOTIFY_COMPLETED, obs_deep_hook_done, NULL,
#endif
				     MHD_OPTION_END);
		if (!d)
			return cli_err(CLI_NO, "export: cannot listen on %s: %s", listen, strerror(errno));
		bi = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
		/* The port as bound: ADDR:0 lets the kernel choose one. */
		inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
		port = bi ? bi->port : ntohs(sa.sin_port);
		fprintf(stderr, "ncclbpf: serving Prometheus metrics on http://%s:%u/metrics\n", host, port);
		for (unsigned long t = 0; !stop_flag && (count < 0 || atomic_load(&ctx.scrapes) < count); t++) {
			if (g_alerts && !(t % (unsigned long)(interval * 20 > 1 ? interval * 20 : 1)))
				alert_poll(pids, n_pids);
#ifdef NCCLBPF_HAVE_OBSERVE
			deep_tick();
#endif
			usleep(50 * 1000);
		}
		MHD_stop_daemon(d);
		if (c->json)
			printf("{\"listen\":\"%s:%u\",\"scrapes\":%d}\n", host, port,
			       atomic_load(&ctx.scrapes));
		return CLI_OK;
	}
	if (count < 0)
		count = textfile ? 0 : 1; /* 0: forever */
	/* To stdout under -j: one document per collection, one per line. */
	if (!textfile)
		cli_json_stream(c);
	/* The error of the last textfile write, 0 once it worked. */
	int failing = 0, writes = 0, failed = 0;

	for (int i = 0; !stop_flag && (!count || i < count); i++) {
		if (i)
			cli_nap(interval);
		if (textfile) {
			int err = write_textfile(textfile, pids, n_pids);

			/*
			 * A full or read-only disk is usually temporary: keep the last
			 * complete file in place, say so once per episode, and try
			 * again at the next interval.  A one-shot write reports it.
			 */
			if (err && count == 1)
				cli_err(0, "export: %s: %s", textfile, strerror(-err));
			else if (err && err != failing)
				fprintf(stderr, "ncclbpf: %s: %s; the previous file is kept, retrying every interval\n",
					textfile, strerror(-err));
			else if (!err && failing)
				fprintf(stderr, "ncclbpf: %s: written again\n", textfile);
			failing = err;
			writes += !err;
			failed += !!err;
		} else {
			size_t len = 0;
			char *buf = render(pids, n_pids, &len);

			if (!buf)
				return cli_err(CLI_NO, "export: cannot render the exposition");
			if (c->json && to_json(&buf, &len))
				cli_err(0, "export: cannot read the exposition back as JSON");
			else
				fwrite(buf, 1, len, stdout);
			fflush(stdout);
			free(buf);
		}
		alert_poll(pids, n_pids);
	}
	if (textfile && c->json) {
		printf("{\"textfile\":");
		cli_json_str(stdout, textfile);
		printf(",\"writes\":%d,\"failed\":%d}\n", writes, failed);
	}
	return failing ? CLI_NO : CLI_OK;
}

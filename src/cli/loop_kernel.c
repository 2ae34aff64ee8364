// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop_kernel.c - `ncclbpf loop --kernel`: closed loop 2.  observe's net
 * probe set counts the job's TCP per socket in the kernel; every interval
 * the counts go to src/loop's feed, which writes them per peer into the
 * policy's peer map and, when a peer turns lossy or healthy again, the
 * tuner plan with an agreed activation call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "loop.h"
#include "ncclbpf/runtime.h"
#ifdef NCCLBPF_HAVE_OBSERVE
#include "observe.h"
#endif

#define MAX_PIDS 256

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int parse_pids(const char *s, int *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || n == max || v < 1 || v > 1 << 30 || (*end && *end != ','))
			return -EINVAL;
		out[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return n;
}

static int parse_proto(const char *s)
{
	static const char *const names[] = { "ll", "ll128", "simple" };

	for (int i = 0; i < 3; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	return -2;
}

static void peer_str(const struct nbpf_kfeed_peer *p, char *out, size_t n)
{
	if (!inet_ntop(p->family, p->addr, out, (socklen_t)n))
		snprintf(out, n, "?");
}

static void print_step(struct cli *c, double t, const struct nbpf_kfeed_report *r)
{
	char a[64];

	if (c->json) {
		printf("{\"t\":%.3f,\"peers\":[", t);
		for (int i = 0; i < r->n_peers; i++) {
			peer_str(&r->peers[i], a, sizeof(a));
			printf("%s{\"peer\":\"%s\",\"key\":%llu,\"retransmits\":%llu,\"retransmits_per_s\":%.1f,"
			       "\"retransmits_per_mib\":%.2f,\"srtt_us\":%u,\"lossy\":%s}", i ? "," : "", a,
			       (unsigned long long)r->peers[i].key, (unsigned long long)r->peers[i].retrans,
			       r->peers[i].rate, r->peers[i].per_mib, r->peers[i].srtt_us,
			       r->peers[i].lossy ? "true" : "false");
		}
		printf("],\"lossy\":%d,\"not_fed\":%d,\"degraded\":%s,\"switched\":%s,\"deferred\":%s",
		       r->n_lossy, r->not_fed, r->degraded ? "true" : "false",
		       r->switched ? "true" : "false", r->deferred ? "true" : "false");
		if (r->switched)
			printf(",\"from_call\":%llu,\"late\":%s", (unsigned long long)r->at,
			       r->late ? "true" : "false");
		printf("}\n");
		fflush(stdout);
		return;
	}
	printf("%8.1fs  peers %d  lossy %d%s  plan %s", t, r->n_peers, r->n_lossy,
	       r->not_fed ? " (more peers not fed)" : "", r->degraded ? "lossy" : "normal");
	if (r->switched)
		printf(" from call %llu%s", (unsigned long long)r->at, r->late ? " (LATE)" : "");
	else if (r->deferred)
		printf(" (switch waits: a rank is not past the last one)");
	putchar('\n');
	for (int i = 0; i < r->n_peers && r->peers[i].lossy; i++) {
		peer_str(&r->peers[i], a, sizeof(a));
		printf("          lossy %s: %llu retransmits, %.1f/s, %.2f per MiB sent, srtt %u us\n", a,
		       (unsigned long long)r->peers[i].retrans, r->peers[i].rate, r->peers[i].per_mib,
		       r->peers[i].srtt_us);
	}
	fflush(stdout);
}

#ifdef NCCLBPF_HAVE_OBSERVE
/* The net probes' per-socket records, as the feed takes them. */
static int read_kernel(struct nbpf_obs *obs, struct nbpf_kfeed_sock **out, int *n)
{
	struct nbpf_obs_snap s;
	struct nbpf_kfeed_sock *k;
	int err = nbpf_obs_snapshot(obs, &s);

	if (err)
		return err;
	k = calloc(s.n_conn ? s.n_conn : 1, sizeof(*k));
	if (!k) {
		nbpf_obs_snap_free(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s.n_conn; i++) {
		const struct obs_conn *c = &s.conn[i].v;

		k[i].family = c->family;
		memcpy(k[i].addr, c->daddr, sizeof(k[i].addr));
		k[i].retrans = c->retrans;
		k[i].bytes_sent = c->bytes_sent;
		k[i].srtt_us = c->srtt_us;
	}
	*out = k;
	*n = (int)s.n_conn;
	nbpf_obs_snap_free(&s);
	return 0;
}
#endif

int cmd_loop_kernel(struct cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kernel", no_argument, NULL, 'k' },
		{ "peer-map", required_argument, NULL, 'P' },
		{ "plan-map", required_argument, NULL, 'L' },
		{ "no-tuner", no_argument, NULL, 'T' },
		{ "retrans-rate", required_argument, NULL, 'R' },
		{ "retrans-per-mib", required_argument, NULL, 'B' },
		{ "srtt-ms", required_argument, NULL, 'S' },
		{ "hold", required_argument, NULL, 'H' },
		{ "lossy-channels", required_argument, NULL, 'C' },
		{ "lossy-proto", required_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "duration", required_argument, NULL, 'D' },
		{ "margin", required_argument, NULL, 'm' },
		{ "margin-seconds", required_argument, NULL, 'M' },
		{ "ranks", required_argument, NULL, 'r' },
		{ "pids", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "share-dir", required_argument, NULL, 'd' },
		{ "etcd", required_argument, NULL, 'E' },
		{ "job", required_argument, NULL, 'J' },
		{ "take-over", no_argument, NULL, 'O' },
		{ "node", required_argument, NULL, 'n' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ 0 },
	};
	struct nbpf_loop_opts lo = { .margin_s = 0.2, .timeout_ms = 10000, .nodes = 1, .log = stderr };
	struct nbpf_kfeed_opts ko = { .retrans_per_mib = 2, .hold_s = 10, .lossy_proto = -1 };
	double interval_ms = 1000, duration = 0;
	int pids[MAX_PIDS], ch, rc = CLI_OK;
	char *end;

	while ((ch = cli_getopt(argc + 1, argv - 1, "q", opts, "loop")) != -1) {
		switch (ch) {
		case 'k': break;
		case 'P': ko.peer_map = optarg; break;
		case 'L': ko.plan_map = optarg; break;
		case 'T': ko.plan_map = ""; break;
		case 'R':
			ko.retrans_per_s = strtod(optarg, &end);
			if (*end || ko.retrans_per_s < 0)
				return cli_usage_error("--retrans-rate: retransmits per second, 0 for none");
			break;
		case 'B':
			ko.retrans_per_mib = strtod(optarg, &end);
			if (*end || ko.retrans_per_mib < 0)
				return cli_usage_error("--retrans-per-mib: retransmits per MiB sent, 0 for none");
			break;
		case 'S': {
			double ms = strtod(optarg, &end);

			if (*end || ms < 0 || ms > 60000)
				return cli_usage_error("--srtt-ms: milliseconds (0 for none)");
			ko.srtt_us = (uint32_t)(ms * 1000);
			break;
		}
		case 'H': ko.hold_s = strtod(optarg, NULL); break;
		case 'C':
			ko.lossy_channels = (int)strtol(optarg, &end, 10);
			if (*end || ko.lossy_channels < 1 || ko.lossy_channels > 64)
				return cli_usage_error("--lossy-channels: 1..64");
			break;
		case 'o':
			if ((ko.lossy_proto = parse_proto(optarg)) < -1)
				return cli_usage_error("--lossy-proto: ll, ll128 or simple");
			break;
		case 'i': interval_ms = strtod(optarg, NULL); break;
		case 'D': duration = strtod(optarg, NULL); break;
		case 'm': lo.margin = strtoull(optarg, NULL, 10); break;
		case 'M': lo.margin_s = strtod(optarg, NULL); break;
		case 'r': lo.ranks = atoi(optarg); break;
		case 't': lo.timeout_ms = (int)(strtod(optarg, NULL) * 1000); break;
		case 'p':
			if ((lo.n_pids = parse_pids(optarg, pids, MAX_PIDS)) < 1)
				return cli_usage_error("--pids: a list of process ids");
			lo.pids = pids;
			break;
		case 'd': lo.share_dir = optarg; break;
		case 'E': lo.etcd = optarg; break;
		case 'J': lo.job = optarg; break;
		case 'O': lo.take_over = true; break;
		case 'n': lo.node = optarg; break;
		case 'N': lo.nodes = atoi(optarg); break;
		case 'q': lo.log = NULL; break;
		default:
			return CLI_USAGE; /* cli_getopt named the option */
		}
	}
	if (cli_optind != argc + 1)
		return cli_usage_error("loop: unexpected argument '%s'", argv[cli_optind - 1]);
	if (lo.share_dir && lo.etcd)
		return cli_usage_error("--share-dir and --etcd exclude each other");
	if ((lo.share_dir || lo.etcd) && (!lo.node || lo.nodes < 1))
		return cli_usage_error("--share-dir and --etcd need --node NAME and --nodes K");
	if (interval_ms < 10 || duration < 0 || lo.timeout_ms < 1 || ko.hold_s < 0)
		return cli_usage_error("--interval is at least 10 ms; --duration, --hold and --timeout "
				       "are not negative");
	if (ko.plan_map && !*ko.plan_map && (ko.lossy_channels || ko.lossy_proto >= 0))
		return cli_usage_error("--no-tuner and --lossy-channels/--lossy-proto exclude each other");
	if ((!ko.plan_map || *ko.plan_map) && !ko.lossy_channels && ko.lossy_proto < 0)
		return cli_usage_error("loop --kernel: say what the tuner does while a peer is lossy "
				       "(--lossy-channels N, --lossy-proto P), or --no-tuner");
#ifndef NCCLBPF_HAVE_OBSERVE
	(void)c;
	(void)print_step;
	return cli_err(CLI_NO, "loop --kernel: this build has no kernel probes (needs bpftool and "
			       "kernel BTF at build time)");
#else
	{
		struct nbpf_obs_opts oo = { .mode = OBS_MODE_PIDS, .probes = 1u << NBPF_OBS_NET, .strict = true };
		struct nbpf_kfeed *f = NULL;
		struct nbpf_obs *obs = NULL;
		int tp[MAX_PIDS], n_tp, err;
		bool late = false;
		double t0;

		/* The kernel first: without privileges or BTF, say so before waiting for ranks. */
		nbpf_obs_opts_env(&oo);
		err = nbpf_obs_open(&oo, &obs);
		if (err)
			return cli_err(CLI_NO, "loop --kernel: %s", ncclbpf_errmsg());
		err = nbpf_kfeed_open(&lo, &ko, &f);
		if (err) {
			rc = cli_err(CLI_NO, "loop --kernel: %s", ncclbpf_errmsg());
			goto out;
		}
		/* The probes count only the ranks' sockets. */
		n_tp = nbpf_kfeed_pids(f, tp, MAX_PIDS);
		for (int i = 0; i < n_tp; i++)
			if ((err = nbpf_obs_add_pid(obs, tp[i]))) {
				rc = cli_err(CLI_NO, "loop --kernel: %s", ncclbpf_errmsg());
				goto out;
			}
		if (lo.log)
			fprintf(lo.log, "kernel loop: %d processes, net probes attached\n", n_tp);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		t0 = nbpf_loop_now_s();
		/* Under -j: a document per step, one per line. */
		cli_json_stream(c);
		while (!stop_flag) {
			struct nbpf_kfeed_report r;
			struct nbpf_kfeed_sock *socks = NULL;
			double now, next = nbpf_loop_now_s() + interval_ms / 1e3;
			int n = 0;

			while (!stop_flag && (now = nbpf_loop_now_s()) < next)
				usleep((useconds_t)((next - now) * 1e6 < 50000 ? (next - now) * 1e6 + 1 : 50000));
			if ((err = read_kernel(obs, &socks, &n))) {
				rc = cli_err(CLI_NO, "loop --kernel: reading the kernel's counters: %s",
					     strerror(-err));
				break;
			}
			now = nbpf_loop_now_s();
			err = nbpf_kfeed_step(f, socks, n, now, &r);
			free(socks);
			if (err) {
				rc = cli_err(CLI_NO, "loop --kernel: %s", ncclbpf_errmsg());
				break;
			}
			late |= r.late;
			print_step(c, now - t0, &r);
			if (duration > 0 && now - t0 >= duration)
				break;
		}
		if (rc == CLI_OK && late)
			rc = CLI_NO;
out:
		nbpf_obs_close(obs);
		nbpf_kfeed_close(f);
		return rc;
	}
#endif
}

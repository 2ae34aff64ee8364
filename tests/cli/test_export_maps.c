// SPDX-License-Identifier: MIT
/*
 * Policy maps as Prometheus families (src/telemetry/prom_maps.c): the
 * declaration parser accepts what policy.h documents and refuses the rest
 * with a reason; entries of several ranks merge by labels; the output
 * passes `promtool check metrics` where promtool is installed, and its
 * numbers are the ones that went in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "telemetry/prom_maps.h"

struct key {
	uint32_t coll;
	int32_t algo, proto;
	uint32_t pad;
};

static void test_parse(void)
{
	static const char *const bad[] = {
		"map=m;type=counter;name=x_total",                       /* no key */
		"map=m;type=counter;name=x;key=a:u32",                   /* counter without _total */
		"map=m;type=gauge;name=x_total;key=a:u32",               /* gauge with _total */
		"map=m;type=meter;name=x_total;key=a:u32",               /* type */
		"map=m;type=counter;name=9x_total;key=a:u32",            /* metric name */
		"map=m;type=counter;name=x_total;key=a:u24",             /* kind */
		"map=m;type=counter;name=x_total;key=le:u32",            /* reserved label */
		"map=m;type=counter;name=x_total;key=__a:u32",           /* reserved label */
		"map=m;type=counter;name=x_total;key=a",                 /* no kind */
		"map=m;type=counter;name=x_total;colour=red;key=a:u32",  /* unknown field */
	};
	struct nbpf_export_spec sp;
	char why[256];

	CHECK(nbpf_export_spec_parse("map=m;type=counter;name=x_total;help=H;"
				     "key=collective:coll,algorithm:algo,protocol:proto,_:u32",
				     &sp, why, sizeof(why)) == 0);
	CHECK(sp.key_size == 16 && sp.n_fields == 4 && sp.fields[2].off == 8);
	/* C layout: a u8 then a u64 pads to 8. */
	CHECK(nbpf_export_spec_parse("map=m;type=gauge;name=g;key=a:u8,b:hex", &sp, why,
				     sizeof(why)) == 0);
	CHECK(sp.fields[1].off == 8 && sp.key_size == 16);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		CHECK_MSG(nbpf_export_spec_parse(bad[i], &sp, why, sizeof(why)) == -EINVAL && why[0],
			  "accepted: %s", bad[i]);
	}
	CHECK(nbpf_export_spec_parse("map=m;type=histogram;name=h_seconds;key=a:u32", &sp, why,
				     sizeof(why)) == 0);
	CHECK(nbpf_export_value_check(&sp, 8, why, sizeof(why)) == -EINVAL); /* sum only */
	CHECK(nbpf_export_value_check(&sp, 24, why, sizeof(why)) == 0);
}

static int promtool_ok(const char *path)
{
	char cmd[512];
	int st;

	if (access("/usr/bin/promtool", X_OK))
		return -1;
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
	st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_write(void)
{
	struct nbpf_export_spec c, h, g;
	struct nbpf_export_set s = { 0 };
	struct key k = { .coll = 4, .algo = 1, .proto = 2 }, k2 = { .coll = 2, .algo = -1, .proto = 0 };
	uint64_t v = 5, hv[4] = { 1000, 1, 2, 3 }; /* sum, then buckets 0..2 */
	uint32_t v4 = 7;
	char path[] = "/tmp/ncclbpf-export-XXXXXX", buf[8192];
	FILE *f;
	size_t n;
	int fd, ok;

	CHECK(!nbpf_export_spec_parse("map=c;type=counter;name=p_calls_total;help=Calls\\n seen;"
				      "key=collective:coll,algorithm:algo,protocol:proto,_:u32",
				      &c, buf, sizeof(buf)));
	CHECK(!nbpf_export_spec_parse("map=h;type=histogram;name=p_latency_seconds;key=collective:coll",
				      &h, buf, sizeof(buf)));
	CHECK(!nbpf_export_spec_parse("map=g;type=gauge;name=p_depth;key=comm:hex", &g, buf,
				      sizeof(buf)));
	/* Two ranks of one job: the same labels add up. */
	CHECK(nbpf_export_add(&s, &c, &k, &v, 8) == 0);
	CHECK(nbpf_export_add(&s, &c, &k, &v, 8) == 0);
	CHECK(nbpf_export_add(&s, &c, &k2, &v, 8) == 0);
	CHECK(nbpf_export_add(&s, &h, &k.coll, hv, sizeof(hv)) == 0);
	CHECK(nbpf_export_add(&s, &h, &k.coll, hv, sizeof(hv)) == 0);
	{
		uint64_t comm = 0xabc;

		CHECK(nbpf_export_add(&s, &g, &comm, &v4, 4) == 0);
		v4 = 3; /* gauges keep the largest */
		CHECK(nbpf_export_add(&s, &g, &comm, &v4, 4) == 0);
	}
	/* One name, other labels or another type: refused. */
	{
		struct nbpf_export_spec other = c;

		strcpy(other.fields[0].label, "coll");
		CHECK(nbpf_export_add(&s, &other, &k, &v, 8) == -EEXIST);
		other = c;
		other.type = NBPF_EXPORT_GAUGE;
		CHECK(nbpf_export_add(&s, &other, &k, &v, 8) == -EEXIST);
	}

	fd = mkstemp(path);
	CHECK(fd >= 0);
	f = fdopen(fd, "w");
	CHECK(f && nbpf_export_write(f, &s) == 0);
	fclose(f);
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	CHECK_STR_CONTAINS(buf, "# HELP p_calls_total Calls\\\\n seen\n"); /* escaped */
	CHECK_STR_CONTAINS(buf, "p_calls_total{collective=\"AllReduce\",algorithm=\"RING\",protocol=\"SIMPLE\"} 10\n");
	CHECK_STR_CONTAINS(buf, "p_calls_total{collective=\"AllGather\",algorithm=\"unknown\",protocol=\"LL\"} 5\n");
	CHECK(strstr(buf, "_=") == NULL); /* padding is no label */
	CHECK_STR_CONTAINS(buf, "p_latency_seconds_bucket{collective=\"AllReduce\",le=\"2e-09\"} 2\n");
	CHECK_STR_CONTAINS(buf, "p_latency_seconds_bucket{collective=\"AllReduce\",le=\"4e-09\"} 6\n");
	CHECK_STR_CONTAINS(buf, "p_latency_seconds_bucket{collective=\"AllReduce\",le=\"+Inf\"} 12\n");
	CHECK(strstr(buf, "le=\"8e-09\"") == NULL); /* the last bucket is open-ended */
	CHECK_STR_CONTAINS(buf, "p_latency_seconds_sum{collective=\"AllReduce\"} 0.000002000\n");
	CHECK_STR_CONTAINS(buf, "p_latency_seconds_count{collective=\"AllReduce\"} 12\n");
	CHECK_STR_CONTAINS(buf, "p_depth{comm=\"0x0000000000000abc\"} 7\n");
	ok = promtool_ok(path);
	if (ok < 0)
		printf("export_maps: promtool not installed, format check skipped\n");
	else
		CHECK_MSG(ok == 1, "promtool check metrics failed on:\n%s", buf);
	unlink(path);
	nbpf_export_free(&s);
}

int main(void)
{
	test_parse();
	test_write();
	return check_summary("export_maps");
}

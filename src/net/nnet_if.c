// SPDX-License-Identifier: Apache-2.0
/*
 * nnet_if.c - which interfaces the transport uses (NCCL_SOCKET_IFNAME,
 * NCCL_SOCKET_FAMILY, NCCL's defaults) and the settings read with them.
 *
 * Devices are discovered once per nnet_init reference; NCCL asks for them
 * from its init thread only, while comms read them concurrently, so the
 * table is immutable between the first nnet_init and the last nnet_fini.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnet_internal.h"

static pthread_mutex_t if_lock = PTHREAD_MUTEX_INITIALIZER;
static int if_refs;
static int if_ndev;
static struct nnet_dev if_devs[NNET_MAX_DEVS];
static struct nnet_settings if_settings;

bool nnet_ifname_match(const char *spec, const char *ifname)
{
	bool exclude = false, exact = false, hit = false;
	const char *p;

	if (!spec || !ifname)
		return false;
	if (*spec == '^') {
		exclude = true;
		spec++;
	}
	if (*spec == '=') {
		exact = true;
		spec++;
	}
	for (p = spec; *p && !hit;) {
		size_t len = strcspn(p, ",");

		if (len && (exact ? strlen(ifname) == len && !strncmp(p, ifname, len)
				  : !strncmp(p, ifname, len)))
			hit = true;
		p += len;
		if (*p == ',')
			p++;
	}
	return exclude ? !hit : hit;
}

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < lo || v > hi)
		return def;
	return (int)v;
}

/* Seconds (a decimal fraction allowed) as milliseconds; 0 switches the deadline off. */
static uint32_t env_seconds_ms(const char *name, uint32_t def_ms)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return def_ms;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > 86400.0 * 365)
		return def_ms;
	return v > 0 && v < 0.001 ? 1 : (uint32_t)(v * 1000.0 + 0.5);
}

static int dev_speed(const char *ifname)
{
	char path[128];
	FILE *f;
	int speed = -1;

	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &speed) != 1)
			speed = -1;
		fclose(f);
	}
	/* Loopback and virtual NICs report nothing (or -1): NCCL's Socket assumes 10 Gb/s. */
	return speed > 0 ? speed : 10000;
}

static char *dev_pci_path(const char *ifname)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", ifname);
	return realpath(path, NULL);
}

static bool family_ok(int fam, int want)
{
	return (fam == AF_INET || fam == AF_INET6) && (!want || fam == want);
}

/* IPv6 link-local addresses need a scope and NCCL skips them; so do we. */
static bool addr_usable(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return !IN6_IS_ADDR_LINKLOCAL(a);
	}
	return true;
}

static int find_devs(const char *spec, int want_family)
{
	struct ifaddrs *ifs, *it;
	int n = 0;

	if (getifaddrs(&ifs))
		return -errno;
	/* IPv4 first, then IPv6 unless asked for: one device per interface, as NCCL. */
	for (int pass = 0; pass < 2; pass++) {
		int fam = pass == 0 ? AF_INET : AF_INET6;

		for (it = ifs; it && n < NNET_MAX_DEVS; it = it->ifa_next) {
			bool dup = false;

			if (!it->ifa_addr || it->ifa_addr->sa_family != fam ||
			    !family_ok(fam, want_family) || !addr_usable(it->ifa_addr) ||
			    !(it->ifa_flags & IFF_UP) || !nnet_ifname_match(spec, it->ifa_name) ||
			    strlen(it->ifa_name) >= NNET_IFNAME_LEN)
				continue;
			for (int i = 0; i < n; i++)
				dup |= !strcmp(if_devs[i].name, it->ifa_name);
			if (dup)
				continue;
			memset(&if_devs[n], 0, sizeof(if_devs[n]));
			strcpy(if_devs[n].name, it->ifa_name);
			memcpy(&if_devs[n].addr, it->ifa_addr,
			       fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
			if_devs[n].speed_mbps = dev_speed(it->ifa_name);
			if_devs[n].pci_path = dev_pci_path(it->ifa_name);
			n++;
		}
	}
	freeifaddrs(ifs);
	return n;
}

static int read_family(void)
{
	const char *s = getenv("NCCL_SOCKET_FAMILY");

	if (s && !strcmp(s, "AF_INET"))
		return AF_INET;
	if (s && !strcmp(s, "AF_INET6"))
		return AF_INET6;
	return 0;
}

static int discover(void)
{
	const char *spec = getenv("NCCL_SOCKET_IFNAME");
	int fam = read_family(), n;

	if (spec && *spec)
		return find_devs(spec, fam);
	/* NCCL's order: InfiniBand IPoIB, then anything but docker/lo/virbr, then docker, then lo. */
	n = find_devs("ib", fam);
	if (n == 0)
		n = find_devs("^docker,lo,virbr", fam);
	if (n == 0)
		n = find_devs("docker", fam);
	if (n == 0)
		n = find_devs("lo", fam);
	return n;
}

static void read_settings(void)
{
	if_settings.nthreads = env_int("NCCL_SOCKET_NTHREADS", 2, 1, NNET_MAX_THREADS);
	if_settings.nsocks_per_thread = env_int("NCCL_NSOCKS_PERTHREAD", 1, 1, NNET_MAX_SOCKS);
	if (if_settings.nthreads * if_settings.nsocks_per_thread > NNET_MAX_SOCKS)
		if_settings.nsocks_per_thread = NNET_MAX_SOCKS / if_settings.nthreads;
	if_settings.min_chunk = (size_t)env_int("NCCLBPF_NET_MIN_CHUNK", 64 << 10, 0, INT_MAX);
	if_settings.timeout_ms = env_seconds_ms("NCCLBPF_NET_TIMEOUT", NNET_TIMEOUT_MS);
	if_settings.hello_timeout_ms = env_seconds_ms("NCCLBPF_NET_HELLO_TIMEOUT", NNET_HELLO_TIMEOUT_MS);
	if (!if_settings.hello_timeout_ms)
		if_settings.hello_timeout_ms = NNET_HELLO_TIMEOUT_MS; /* never unbounded */
}

int nnet_init(void)
{
	int err = 0;

	pthread_mutex_lock(&if_lock);
	if (if_refs == 0) {
		read_settings();
		if_ndev = discover();
		if (if_ndev < 0) {
			err = if_ndev;
			if_ndev = 0;
		}
	}
	if (!err)
		if_refs++;
	pthread_mutex_unlock(&if_lock);
	return err;
}

void nnet_fini(void)
{
	pthread_mutex_lock(&if_lock);
	if (if_refs > 0 && --if_refs == 0) {
		nnet_conn_cleanup();
		for (int i = 0; i < if_ndev; i++)
			free(if_devs[i].pci_path);
		memset(if_devs, 0, sizeof(if_devs));
		if_ndev = 0;
	}
	pthread_mutex_unlock(&if_lock);
}

int nnet_ndev(void)
{
	return if_ndev;
}

const struct nnet_dev *nnet_dev_get(int dev)
{
	return dev >= 0 && dev < if_ndev ? &if_devs[dev] : NULL;
}

const struct nnet_settings *nnet_settings(void)
{
	return &if_settings;
}

#!/bin/sh
# Installs the Debian packages ncclbpf needs to build and test (run as root).
set -e
PKGS="build-essential cmake ninja-build pkg-config clang llvm libbpf-dev libelf-dev nettle-dev zlib1g-dev libmicrohttpd-dev prometheus bpftool liburing-dev file curl jq prometheus-alertmanager chromium libcurl4-openssl-dev libjansson-dev etcd-server etcd-client"
# curl and jq: the dashboard tests query a Prometheus server and read the dashboard JSON;
# prometheus-alertmanager: the webhook test delivers into a real one (not started as a service).
# chromium: the report test renders the HTML page headless and checks what it drew.
# libcurl and jansson: the node exchange talks to etcd through its JSON gateway (src/loop/etcd.c);
# etcd-server, etcd-client: the rank tester starts a real three-member cluster on loopback.
# bpftool generates vmlinux.h and the skeletons of src/observe; liburing is for its tests and bench.
# The bcc tools and bpftrace are only for bench/observe's comparison: NCCLBPF_BENCH_DEPS=1 adds them.
[ "${NCCLBPF_BENCH_DEPS:-0}" = 1 ] && PKGS="$PKGS bpfcc-tools bpftrace"
missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# no_libcurl.sh CLI POLICY: on a machine without a usable libcurl (here: a
# private mount namespace with an empty file over it), the command still
# starts and does everything but talk to etcd, and `--etcd` says which
# package is missing instead of failing to start or failing obscurely.
set -u
cli=$1 pol=$2
skip() { echo "no_libcurl: SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root for a private mount namespace"
lib=$(ldconfig -p | sed -n 's/.*libcurl\.so\.4 (libc6,x86-64) => //p' | head -1)
[ -n "$lib" ] || skip "libcurl.so.4 not installed"
lib=$(readlink -f "$lib")
err=$(mktemp)
trap 'rm -f "$err"' EXIT
unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/null '$lib'" 2>/dev/null ||
	skip "cannot make a private mount namespace here"
unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/null '$lib' &&
	'$cli' version >/dev/null || exit 10
	'$cli' change apply nolibcurl-\$\$ all '$pol' --node n1 --nodes 1 --etcd http://127.0.0.1:9 2>'$err'
	exit \$?"
rc=$?
[ "$rc" -ne 10 ] || { echo "no_libcurl: FAIL: the command does not start without libcurl"; exit 1; }
[ "$rc" -eq 1 ] || { echo "no_libcurl: FAIL: change apply --etcd exited $rc, not 1"; cat "$err"; exit 1; }
grep -q 'libcurl (Debian: libcurl4) cannot be used' "$err" ||
	{ echo "no_libcurl: FAIL: no message naming libcurl:"; cat "$err"; exit 1; }
echo "no_libcurl: ok: $(cat "$err")"

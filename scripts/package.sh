#!/bin/sh
# Builds the Debian package (cpack -G DEB) in BUILD_DIR (default build/),
# configured for /usr.  With --smoke (as root, on a machine that may change
# its packages): installs it with apt-get, checks that the installed command
# verifies, simulates and tunes with the installed plugin and policies, that
# NCCL's short names and the pkg-config file are in place, then removes it.
set -e
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$BUILD_DIR"
rm -f "$BUILD_DIR"/ncclbpf_*.deb
(cd "$BUILD_DIR" && cpack -G DEB)
deb=$(ls "$PWD/$BUILD_DIR"/ncclbpf_*.deb)
dpkg-deb --field "$deb" Package Version Architecture Depends Section
[ "${1:-}" = --smoke ] || exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if dpkg-query -W -f '${Status}' ncclbpf 2>/dev/null | grep -q 'ok installed'; then
	echo "package.sh: ncclbpf is already installed here; not touching it" >&2
	exit 1
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb"
trap 'DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq ncclbpf' EXIT
files=$(dpkg -L ncclbpf)
set -x
cd /
[ "$(command -v ncclbpf)" = /usr/bin/ncclbpf ]
ncclbpf verify /usr/share/ncclbpf/policies/size_aware.bpf.o
env -u NCCLBPF_PLUGIN NCCLBPF_LOG=none ncclbpf sim /usr/share/ncclbpf/policies/size_aware.bpf.o \
	--coll allreduce --ranks 8 --sizes 4K:16M | grep -q '^AllReduce'
# tune finds its sweep policy and (with clang, only suggested) policy.h where the package put them.
out=$(mktemp -d)
nc=--no-compile
command -v clang >/dev/null && nc=
env -u NCCLBPF_PLUGIN NCCLBPF_LOG=none ncclbpf tune --coll allreduce --sizes 1K:2K --channels 0,8 \
	--reps 2 --out "$out/t" $nc >/dev/null
[ -s "$out/t/tuned.bpf.c" ] && { [ -n "$nc" ] || [ -s "$out/t/tuned.bpf.o" ]; }
rm -rf "$out"
for kind in tuner profiler env net; do
	# NCCL_<KIND>_PLUGIN=ncclbpf: a link on the loader's default path, resolving.
	lib=$(printf '%s\n' "$files" | grep "/libnccl-$kind-ncclbpf.so\$")
	[ -L "$lib" ] && [ -e "$lib" ]
done
pkg-config --exists ncclbpf
[ -f /usr/share/bash-completion/completions/ncclbpf ]
[ -f /usr/share/man/man1/ncclbpf-verify.1.gz ] || [ -f /usr/share/man/man1/ncclbpf-verify.1 ]
set +x
trap - EXIT
DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq ncclbpf
for f in $files; do
	[ -d "$f" ] || [ ! -e "$f" ] || { echo "package.sh: $f left after purge" >&2; exit 1; }
done
echo "package.sh: $(basename "$deb") installs, verifies, simulates and removes cleanly"

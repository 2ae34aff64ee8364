#!/bin/sh
# Installs the Debian packages ncclbpf needs to build and test (run as root).
set -e
PKGS="build-essential cmake ninja-build pkg-config clang llvm libbpf-dev libelf-dev nettle-dev zlib1g-dev libmicrohttpd-dev prometheus file"
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

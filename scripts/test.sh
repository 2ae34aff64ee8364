#!/bin/sh
# Builds ncclbpf from scratch in BUILD_DIR (default build/) and runs every test.
# SANITIZE=1 builds with ASan+UBSan into build-asan/.
# TSAN=1 builds with ThreadSanitizer into build-tsan/ and runs only the tests
# labelled "concurrency" (threads racing in the plugin, maps and epochs); it
# fails when no test carries the label.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
if [ "${SANITIZE:-0}" = 1 ]; then
	BUILD_DIR=${BUILD_DIR:-build-asan}
	EXTRA="-DNCCLBPF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	export NCCLBPF_TEST_SCALE=${NCCLBPF_TEST_SCALE:-0.1}
elif [ "${TSAN:-0}" = 1 ]; then
	BUILD_DIR=${BUILD_DIR:-build-tsan}
	EXTRA="-DNCCLBPF_TSAN=ON -DCMAKE_BUILD_TYPE=Debug"
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
	export NCCLBPF_TEST_SCALE=${NCCLBPF_TEST_SCALE:-0.1}
	CTEST_ARGS="-L concurrency --no-tests=error"
else
	BUILD_DIR=${BUILD_DIR:-build}
	EXTRA=""
fi
cmake -S . -B "$BUILD_DIR" -G Ninja $EXTRA
cmake --build "$BUILD_DIR"
cd "$BUILD_DIR"
# A default runtime directory (control sockets, map files) of this run's
# own: the machine-wide one (/tmp/ncclbpf-<uid>) holds every other job and
# test suite of the user, and tests that ask "every process" would reach
# theirs (a stopped one held an exporter for the client's whole timeout).
run=$(mktemp -d /dev/shm/ncclbpf-suite.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$run"' EXIT
XDG_RUNTIME_DIR=$run ctest --output-on-failure -j "$(nproc)" --timeout 900 ${CTEST_ARGS:-}

#!/bin/sh
# The whole test suite, as CI runs it: a warnings-as-errors build and `make
# check`, the same suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer, the threaded parts under ThreadSanitizer,
# `make distcheck`, coverage with floors per
# layer, a short libFuzzer run of every harness, then the Debian package
# built, installed, run and purged (tests/package/deb.sh).  Builds go to
# build/, build-san/, build-tsan/ and build/build-cov/ beside the sources.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cd "$src"
if [ -f config.status ]; then
    # configured in the source tree (by hand): autoconf refuses out-of-tree
    # builds beside it, so clean it first
    echo "=== the source tree was configured in place: make distclean first"
    make distclean >/dev/null
fi
./autogen.sh

echo "=== build and check (-Werror)"
mkdir -p build && cd build
../configure --enable-werror
make -j"$jobs"
make -j"$jobs" check || { cat test-suite.log; exit 1; }
cd "$src"

echo "=== formatting (clang-format, .clang-format)"
(cd build && make format-check)

echo "=== build and check under ASan + UBSan"
mkdir -p build-san && cd build-san
../configure --enable-werror --enable-sanitizers CFLAGS="-O1 -g"
make -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    make -j"$jobs" check || { cat test-suite.log; exit 1; }
cd "$src"

# corrald's worker threads and corral match -j: the suite once more under
# ThreadSanitizer (it cannot be combined with ASan, hence its own build)
echo "=== build and check under ThreadSanitizer"
mkdir -p build-tsan && cd build-tsan
../configure --enable-werror --enable-sanitizers=thread CFLAGS="-O1 -g"
make -j"$jobs"
# ThreadSanitizer's shadow memory needs the address-space layout it expects;
# on kernels with more mmap randomisation it refuses to start ("unexpected
# memory mapping"), which turning ASLR off for the run (setarch -R) cures
tsan=
if ! ./tools/corral --version > tsan-probe.log 2>&1; then
    if setarch "$(uname -m)" -R ./tools/corral --version >> tsan-probe.log 2>&1; then
        tsan="setarch $(uname -m) -R"
    else
        cat tsan-probe.log
        echo "ThreadSanitizer cannot start on this machine (above): this stage is left out"
        tsan=none
    fi
fi
# ignore_noninstrumented_modules: libcurl's and libuv's own calls (socket() on
# curl's thread, pipe2() on the loop) reuse file descriptor numbers, which the
# kernel orders but ThreadSanitizer, not seeing into those libraries, reports
# as races; our code calling them is still checked
[ "$tsan" = none ] ||
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1 \
        $tsan make -j"$jobs" check || { cat test-suite.log; exit 1; }
cd "$src"

# the tarball builds with -Werror and its unit tests pass (the whole suite
# already ran twice above, and once more under coverage below)
echo "=== distcheck"
unit_tests=$(ls tests/unit/test_*.c | sed 's/\.c$//' | tr '\n' ' ')
(cd build && make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror \
    TESTS="$unit_tests tests/check-layers.sh")

echo "=== coverage (gcovr; a floor per layer)"
(cd build && make -j"$jobs" coverage)

if command -v clang >/dev/null 2>&1; then
    echo "=== fuzz (${FUZZ_SECONDS:-30}s per harness)"
    FUZZ_OUT="$src/build/fuzz" sh tests/fuzz/run.sh
fi
echo "=== the Debian package (tests/package/deb.sh)"
sh tests/package/deb.sh
echo "=== all tests passed"

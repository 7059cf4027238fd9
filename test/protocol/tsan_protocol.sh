#!/usr/bin/env bash
# The protocol core's tests under ThreadSanitizer: its test cases with threads
# (rings, pulls and staged sends from several threads, each thread's order
# checked; receives posted while another thread matches) and the rest.
#
# usage: test/protocol/tsan_protocol.sh [BUILD_DIR] [Catch2 test spec...]
#   BUILD_DIR: default build-tsan-protocol (configured here on first use)
#   e.g. test/protocol/tsan_protocol.sh build-tsan-protocol "[threads]"
#
# Not in the test command: the build takes ~1.5 minutes on 2 cores. GCC does
# not model std::atomic_thread_fence under TSan (-Wtsan): the one fence in the
# protocol core orders a ring's setup before its magic number, read by another
# process through its own mapping, which TSan cannot follow anyway. UCX's
# memory hooks (madvise at a thread's exit) crash inside TSan's interceptors:
# they are off for the run. UCX itself is not instrumented: its own locks are
# seen (pthread's, intercepted), its atomics are not.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
dir=${1:-build-tsan-protocol}
shift || true
flags="-O1 -g -fsanitize=thread -Wno-tsan"
if [ ! -f "$dir/Makefile" ]; then
    [ -x configure ] || autoreconf -fi
    mkdir -p "$dir"
    (cd "$dir" && "$top/configure" -q CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=thread")
fi
make -C "$dir" -j2 -s test/protocol/protocol_tests
UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
    "$dir/test/protocol/protocol_tests" "$@"

#!/bin/bash
# The matching-trace tests (test/engine/trace_tests.cc) and the engine under
# ThreadSanitizer (tsan_build.sh): engines of several threads recording into
# the process's one recorder at once (its lock, MPI_THREAD_MULTIPLE's case),
# checked to lose no record and to keep each thread's order. Extra arguments
# go to Catch2 (default: every [trace] test).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/engine/tsan_build.sh
tsan_program trace_tests test/engine/catch_main.cc test/engine/trace_tests.cc
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$out/trace_tests" "${@:-[trace]}"

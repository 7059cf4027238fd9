#!/bin/bash
# Builds the concurrent tail-queue test (test/engine/tailq_concurrent.cc) and
# the engine under ThreadSanitizer into build-tsan/ (tsan_build.sh), then runs
# it: every backend wrapped in tail queues. Extra arguments go to the test
# (e.g. --ops 1000000 --backend list).
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/engine/tsan_build.sh
tsan_program tailq_concurrent test/engine/tailq_concurrent.cc
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$out/tailq_concurrent" "$@"

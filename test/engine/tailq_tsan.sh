#!/bin/bash
# Builds the concurrent tail-queue test (test/engine/tailq_concurrent.cc) and
# the engine under ThreadSanitizer into build-tsan/ (g++ only, no configure),
# then runs it: every backend wrapped in tail queues. Extra arguments go to the
# test (e.g. --ops 1000000 --backend list).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build-tsan
mkdir -p "$out"
flags="-std=c++17 -O1 -g -fsanitize=thread -Wall -Wextra -Wpedantic -Wshadow -Werror -I."
objs=()
build() { # source, extra flags
    local o="$out/$(echo "$1" | tr / _).o"
    if [ ! -e "$o" ] || [ "$1" -nt "$o" ] || [ -n "$(find matching -name '*.h' -newer "$o")" ]; then
        g++ $flags ${2:-} -c "$1" -o "$o"
    fi
    objs+=("$o")
}
for f in matching/*.cc matching/simd/dispatch.cc matching/simd/kernels_scalar.cc; do build "$f"; done
build matching/simd/kernels_avx2.cc -mavx2
build matching/simd/kernels_avx512.cc "-mavx512f -mavx512bw -mavx512vl -mavx512dq"
build test/engine/tailq_concurrent.cc
g++ -fsanitize=thread -o "$out/tailq_concurrent" "${objs[@]}" -lpthread
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$out/tailq_concurrent" "$@"

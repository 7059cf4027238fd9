#!/bin/bash
# Builds bench/threads/tailq_bench with g++ alone (no configure, MPI or Google
# Benchmark) into OUT (default build-bench-threads/), from the repository root
# or from a copy holding matching/ and bench/threads/ side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-bench-threads}
mkdir -p "$out"
f="-std=c++17 -O2 -DNDEBUG -I. -pthread"
for s in matching/*.cc matching/simd/dispatch.cc matching/simd/kernels_scalar.cc; do
    g++ $f -c "$s" -o "$out/$(echo "$s" | tr / _).o" &
done
g++ $f -mavx2 -c matching/simd/kernels_avx2.cc -o "$out/avx2.o" &
g++ $f -mavx512f -mavx512bw -mavx512vl -mavx512dq -c matching/simd/kernels_avx512.cc -o "$out/avx512.o" &
g++ $f -c bench/threads/tailq_bench.cc -o "$out/bench.o" &
wait
g++ -pthread -o "$out/tailq_bench" "$out"/*.o
echo "$out/tailq_bench"

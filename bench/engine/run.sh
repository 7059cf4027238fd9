#!/usr/bin/env bash
# Runs the engine benchmark and writes docs/engine-bench.{json,png,txt}.
# usage: bench/engine/run.sh [extra Google Benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/build.sh
./build/bench/engine/engine_bench --benchmark_format=json --benchmark_min_time=0.2 "$@" \
    > docs/engine-bench.json
python3 bench/engine/plot-engine-bench.py docs/engine-bench.json docs/engine-bench.png \
    | tee docs/engine-bench.txt

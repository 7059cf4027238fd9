#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the engine demo,
# which prints the search depths every backend needed on a small workload.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/examples/engine_demo

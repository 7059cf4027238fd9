#!/bin/bash
# The paper's Fig. 3/7 sweep: every backend given (default list,auto), 2..16
# threads where cores exist, lengths 1..1024, both queues filled and PRQ only;
# global, tailq and tail queues in bins (default 16; 0: none).
# CSV on stdout. usage: bench/threads/run.sh [backends] [threads] [reps] [bins]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(bash bench/threads/build.sh)
b=${1:-list,auto}
t=${2:-2,4,8,16}
r=${3:-5}
bins=()
[ "${4:-16}" != 0 ] && bins=(--bins "${4:-16}")
"$bin" --backends "$b" --threads "$t" --reps "$r" "${bins[@]}"
"$bin" --backends "$b" --threads "$t" --reps "$r" --prq-only "${bins[@]}" | tail -n +2

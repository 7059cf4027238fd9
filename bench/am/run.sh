#!/usr/bin/env bash
# Runs the active-message benchmark (build/mpix_am_bench) under pml/ubermatch
# with the machine's load and idle share recorded before and after:
#   bash bench/am/run.sh [NP] [bench arguments...]     e.g. bash bench/am/run.sh 2 --n 100000 --reps 5
# NP ranks: the last one is the target, the others origins (oversubscribed when NP > cores).
# AM_MPIRUN_ARGS: more mpirun arguments (e.g. "--mca mpi_yield_when_idle 0").
# AM_BENCH: another build of the benchmark (e.g. one linked with an older libmpix_am).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/mpi/common.sh
. bench/mpi/common.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh
np=${1:-2}
shift || true
bin=${AM_BENCH:-build/mpix_am_bench}
[ -x "$bin" ] || { echo "run.sh: $bin not built (bash scripts/build.sh)" >&2; exit 1; }
echo "# $(date -u '+%F %T UTC'), $(um_machine)"
echo "# before: load $(cut -d' ' -f1-3 /proc/loadavg), CPUs $(um_cpu_idle_pct)% idle"
# shellcheck disable=SC2086 # AM_MPIRUN_ARGS is a list of words
echo "# mpirun -np $np --mca pml ubermatch ${AM_MPIRUN_ARGS:-} $bin $*"
# shellcheck disable=SC2086
mpirun -np "$np" --mca pml ubermatch ${AM_MPIRUN_ARGS:-} "$bin" "$@"
echo "# after: load $(cut -d' ' -f1-3 /proc/loadavg), CPUs $(um_cpu_idle_pct)% idle"

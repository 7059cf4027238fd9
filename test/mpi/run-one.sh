#!/usr/bin/env bash
# Runs one MPI test under mpirun and judges it: the one definition of how an
# MPI test runs, for `make check` (its LOG_COMPILER), run-mpi-tests.sh and the
# test command.
#
# usage: test/mpi/run-one.sh [mpirun args...] PROGRAM
#   e.g. test/mpi/run-one.sh --mca pml ubermatch build/test/mpi/ordering
#        test/mpi/run-one.sh --ranks ordering    prints 6 (the ranks below)
#
# Runs
#   timeout $MPI_TESTS_TIMEOUT $MPIRUN --oversubscribe [--allow-run-as-root] -np N [mpirun args] PROGRAM
# with N the test's ranks (below) and --allow-run-as-root only when run as root
# (mpirun refuses root without it). The test passes when mpirun exits 0 and
# rank 0 printed "PASS <name> (". Prints mpirun's output, then one last line
#   PASS <name> (np N, T s)   or   FAIL <name> (why, np N, T s)
# and exits 0 or 1.
#
# Which components mpirun finds is the caller's: `make check` and the test
# command source scripts/env.sh (the build tree's); otherwise the installed ones.
#
# automake gives all of `make check`'s tests one LOG_COMPILER: a program outside
# test/mpi/ (the engine's and protocol's tests) runs as it is, without mpirun.
#
# Environment:
#   MPI_TESTS_TIMEOUT=60   seconds (mpirun is killed after that); the tests' own
#                          watchdog (MPITEST_WATCHDOG_S, mpitest.h) fires 5 s
#                          before, unless set
#   MPIRUN=mpirun
#
# Ranks (oversubscribed; 2 cores are enough): ordering 6; unexpected, probe,
# rma 3; intercomm, collectives, coll_variants 5; newcomm 8; any other 2.
set -u

ranks_of() {
    case "$1" in
    ordering) echo 6 ;;
    unexpected | probe | rma) echo 3 ;;
    intercomm | collectives | coll_variants) echo 5 ;;
    newcomm) echo 8 ;;
    *) echo 2 ;;
    esac
}

if [ "${1:-}" = --ranks ] && [ $# -eq 2 ]; then # for other runners (test/multihost)
    ranks_of "$2"
    exit 0
fi
if [ $# -lt 1 ]; then
    echo "usage: $0 [mpirun args...] PROGRAM" >&2
    echo "       $0 --ranks TEST   (prints how many ranks TEST runs with)" >&2
    exit 2
fi
prog=${!#}
case $prog in
*test/mpi/*) ;;
*) exec "$prog" ;;
esac
args=("${@:1:$#-1}")
name=$(basename "$prog")
np=$(ranks_of "$name")
timeout=${MPI_TESTS_TIMEOUT:-60}
# A longer time limit must reach the tests too: their watchdog (45 s by
# default) would otherwise fail a slow but sound run, e.g. bigmsg's 2 GiB
# messages on a loaded machine (~110 s at load 20).
export MPITEST_WATCHDOG_S=${MPITEST_WATCHDOG_S:-$((timeout > 10 ? timeout - 5 : timeout))}
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
timeout -k 10 "$timeout" "${MPIRUN:-mpirun}" --oversubscribe "${root[@]}" -np "$np" "${args[@]}" "$prog" \
    >"$out" 2>&1 </dev/null
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$out"
# Unanchored: mpirun forwards a rank's stderr in 4 KiB chunks, so on a loaded
# machine the PASS line can land inside a long stderr line (assertions writes
# 12 KB of expected errors; seen once in CI).
if [ $rc -eq 0 ] && grep -q "PASS $name (" "$out"; then
    echo "PASS $name (np $np, $secs s)"
    exit 0
fi
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    why="timeout after $timeout s"
elif [ $rc -eq 0 ]; then
    why="exit code 0 but no 'PASS $name' line"
else
    why="exit code $rc"
fi
echo "FAIL $name ($why, np $np, $secs s)"
exit 1

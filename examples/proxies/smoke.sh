#!/usr/bin/env bash
# Smoke check of the proxy applications (part of the test command): each proxy
# at 4 ranks, small, under the ubermatch PML with the colpnp engine and its
# timers on. A proxy passes when mpirun exits 0, rank 0 printed its PASS line,
# --stats printed a line for each rank, and the engine's timers reached the
# pvars (rank 0's search time is not 0).
#
#   bash examples/proxies/smoke.sh [BUILD_DIR] [extra mpirun args...]
#
# Expects scripts/env.sh to be sourced (the component path). Ends with
# "proxies: N passed, M failed"; exits non-zero when one failed.
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
extra=("$@")
MPIRUN=${MPIRUN:-mpirun}
np=4
passed=0
failed=0
for spec in "radix --size 256 --iters 2" "nbody --size 64 --iters 3" \
            "miniamr --size 4 --iters 5" "fds --size 4 --iters 3"; do
    read -r -a args <<<"$spec"
    proxy=${args[0]}
    log=$(mktemp)
    start=$SECONDS
    timeout -k 5 60 "$MPIRUN" --allow-run-as-root --oversubscribe -np $np --mca pml ubermatch \
        --mca pml_ubermatch_backend colpnp --mca pml_ubermatch_timers 1 "${extra[@]}" \
        "$build/examples/proxies/$proxy" --stats "${args[@]:1}" >"$log" 2>&1 </dev/null
    rc=$?
    stats=$(grep -c "^STATS proxy=$proxy np=$np rank=" "$log")
    ns=$(sed -n "s/^STATS proxy=$proxy np=$np rank=0 .* coll_search_ns=\([0-9]*\) .*/\1/p" "$log")
    if [ $rc -eq 0 ] && grep -q "PASS $proxy np $np " "$log" && [ "$stats" -eq $np ] &&
        [ "${ns:-0}" -gt 0 ]; then
        echo "PASS $proxy ($((SECONDS - start)) s): $(grep -o "PASS $proxy .*" "$log" | head -1)"
        passed=$((passed + 1))
    else
        echo "FAIL $proxy (exit code $rc, $stats STATS lines, rank 0 collective search ns '${ns:-}')"
        tail -n 15 "$log" | sed 's/^/    | /'
        failed=$((failed + 1))
    fi
    rm -f "$log"
done
echo "proxies: $passed passed, $failed failed"
[ $failed -eq 0 ]

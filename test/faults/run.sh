#!/usr/bin/env bash
# Faults a production PML survives: a rank killed (SIGKILL) while its peers
# wait on it. For each PML argument set (default: ubermatch with auto and list,
# and ob1 for reference) the job must end, with mpirun's non-zero exit and its
# report of the killed process, within LIMIT seconds (default 60).
#
#   test/faults/run.sh BUILD_DIR ["--mca pml ubermatch" ...]
# Last line: "fault tests: N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: test/faults/run.sh BUILD_DIR [pml args...]}
shift
limit=${LIMIT:-60}
mkdir -p "$build"
mpicc -O2 -Wall -Wextra -Werror -o "$build/kill_peer" "$here/kill_peer.c" || {
    echo "fault tests: 0 passed, 1 failed"
    exit 1
}
[ $# -gt 0 ] || set -- "--mca pml ubermatch --mca pml_ubermatch_backend auto" \
    "--mca pml ubermatch --mca pml_ubermatch_backend list" "--mca pml ob1"
passed=0
failed=0
for args in "$@"; do
    log="$build/kill_peer.log"
    start=$SECONDS
    # shellcheck disable=SC2086 # the PML's arguments are words
    timeout -k 5 "$limit" mpirun --allow-run-as-root --oversubscribe -np 3 $args "$build/kill_peer" >"$log" 2>&1 </dev/null
    rc=$?
    took=$((SECONDS - start))
    # mpirun itself exits 137 (128 + SIGKILL) for a killed rank: a hang is told by the time.
    if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ $took -ge "$limit" ]; }; then
        echo "FAIL kill_peer ($args): still running after $limit s: the job hangs"
        failed=$((failed + 1))
    elif [ $rc -eq 0 ] || grep -q "completed a call that depends on a killed rank" "$log"; then
        echo "FAIL kill_peer ($args): exit $rc; a wait on the killed rank returned"
        failed=$((failed + 1))
    elif ! grep -qiE "signal 9|killed" "$log"; then
        echo "FAIL kill_peer ($args): exit $rc in $took s, but mpirun did not report the killed rank"
        tail -5 "$log" | sed 's/^/    | /'
        failed=$((failed + 1))
    else
        echo "PASS kill_peer ($args): mpirun exited $rc after $took s: $(grep -iE -m1 'signal 9|killed' "$log" | sed 's/^ *//')"
        passed=$((passed + 1))
    fi
done
echo "fault tests: $passed passed, $failed failed"
[ $failed -eq 0 ]

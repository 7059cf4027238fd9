#!/usr/bin/env bash
# libmpix_am under AddressSanitizer and UndefinedBehaviorSanitizer: the library's
# sources with the self-checking test (am/test_am.c, am/test_amv.c) and the random
# one (am/test_am_random.c), built by mpicc with -fsanitize=address,undefined,
# run on 4 ranks through pml/ubermatch (the random test with two seeds, one with
# every message a UCX rendezvous one). Any report ends the run (UBSan does not
# recover) and fails it. Open MPI and UCX are not instrumented; their allocations
# made at start-up and kept to the end are not ours to judge, so leak checking is
# off.
#
# usage: am/asan.sh [BUILD_DIR]    (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=$build/am-asan
mkdir -p "$out"
lib=(am/mpix_am.c am/am_target.c am/am_epoch.c am/am_credit.c am/am_range.c am/am_thread.c)
flags=(-std=gnu11 -O1 -g "-fsanitize=address,undefined" -fno-sanitize-recover=undefined -fno-omit-frame-pointer
    -Wall -Wextra -Werror -Iam -I.)
mpicc "${flags[@]}" am/test_am.c am/test_amv.c "${lib[@]}" -o "$out/mpix_am_test" -ldl
mpicc "${flags[@]}" am/test_am_random.c "${lib[@]}" -o "$out/mpix_am_random_test" -ldl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
run() { # expected line, mpirun arguments...
    local expect=$1 log
    shift
    log=$(timeout 120 mpirun -np 4 --oversubscribe --mca pml ubermatch -x ASAN_OPTIONS -x UBSAN_OPTIONS "$@" 2>&1) &&
        ! grep -qE "ERROR: AddressSanitizer|runtime error:" <<<"$log" && grep -q "$expect" <<<"$log" && {
        grep "$expect" <<<"$log" | head -n 1
        return 0
    }
    echo "asan ($*): failed:"
    grep -A 30 -E "ERROR: AddressSanitizer|runtime error:" <<<"$log" | head -n 40 || true
    tail -n 10 <<<"$log"
    return 1
}
status=0
run "mpix_am tests passed" "$out/mpix_am_test" || status=1
run "every output and count right" "$out/mpix_am_random_test" 200 1 || status=1
run "every output and count right" --mca pml_ubermatch_shm_eager_limit 0 --mca pml_ubermatch_ucx_rndv_thresh 64 \
    "$out/mpix_am_random_test" 200 2 || status=1
exit $status

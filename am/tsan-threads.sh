#!/usr/bin/env bash
# libmpix_am under MPI_THREAD_MULTIPLE with ThreadSanitizer: the threaded test
# (am/test_am_threads.c) and the library's sources built with -fsanitize=thread
# by mpicc, run on 3 ranks of 4 threads, through pml/ubermatch's arrival hook
# and without it (probes). The run must pass its own checks, and no report of
# TSan may have an access, lock or unlock whose first frame outside TSan lies in
# am/ (the library or its test).
#
# Open MPI, UCX and PMIx are not instrumented and report races of their own
# (their atomics are invisible to TSan, their pthread calls are not): those
# reports are counted and shown by count only. UCX's memory hooks crash inside
# TSan's interceptors: off for the run. The one synchronization TSan cannot see
# on our side, the PML handing a window to its arrival hook under its lock, is
# annotated in am_target.c.
#
# usage: am/tsan-threads.sh [BUILD_DIR] [NP] [THREADS]    (default build 3 4)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
np=${2:-3}
threads=${3:-4}
out=$build/am-tsan
mkdir -p "$out"
mpicc -std=gnu11 -O1 -g -fsanitize=thread -Wall -Wextra -Werror -Iam -I. am/test_am_threads.c am/mpix_am.c \
    am/am_target.c am/am_epoch.c am/am_credit.c am/am_range.c am/am_thread.c -o "$out/mpix_am_thread_test" \
    -ldl -lpthread
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
for mode in hook MPIX_AM_NO_PML_HOOKS; do
    logs=$(mktemp -d)
    env=()
    [ $mode = hook ] || env=(-x $mode=1)
    set +e
    timeout 120 mpirun -np "$np" --oversubscribe --mca pml ubermatch "${env[@]}" -x UCX_MEM_MALLOC_HOOKS=no \
        -x UCX_MEM_EVENTS=no -x TSAN_OPTIONS="halt_on_error=0 exitcode=0 log_path=$logs/rank" \
        "$out/mpix_am_thread_test" "$threads" > "$logs/stdout" 2>&1
    rc=$?
    set -e
    if [ $rc -ne 0 ] || ! grep -q "every AM ran once" "$logs/stdout"; then
        echo "tsan-threads ($mode): the test failed (exit $rc):"
        tail -n 20 "$logs/stdout"
        status=1
    fi
    if ! python3 - "$mode" "$logs"/rank.* <<'EOF'; then status=1; fi
import re, sys
mode, files = sys.argv[1], sys.argv[2:]
total, ours = 0, []
for name in files:
    for report in open(name, errors="replace").read().split("WARNING: ThreadSanitizer:")[1:]:
        total += 1
        body = report.split("SUMMARY")[0]
        for section in body.split("\n\n"):
            head = section.strip().split("\n")[0]
            if "created at" in head or head.startswith("Thread T") or head.startswith("Location"):
                continue
            frames = [f for f in re.findall(r"#\d+ \S+ (\S+)", section) if "libtsan" not in f and "sanitizer" not in f]
            if frames and "/am/" in frames[0]:
                ours.append(report[:4000])
                break
print(f"tsan-threads ({mode}): {len(files)} ranks, {total} TSan reports, {len(ours)} in libmpix_am or its test"
      + ("" if total == len(ours) else f" (the other {total - len(ours)}: inside Open MPI, PMIx or UCX)"))
for r in ours[:5]:
    print("=" * 20 + r)
sys.exit(1 if ours or not files else 0)
EOF
    rm -rf "$logs"
done
exit $status

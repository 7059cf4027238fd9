#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# suite. Ends with one line "tests: N passed, M failed" (suites), and exits
# non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh --sanitizers || { echo "build failed"; echo "tests: 0 passed, 1 failed"; exit 1; }

passed=0
failed=0
suite() { # name, command...
    local name=$1
    shift
    echo ">>> $name"
    local start=$SECONDS
    if "$@"; then
        passed=$((passed + 1))
        echo ">>> $name: passed ($((SECONDS - start)) s)"
    else
        failed=$((failed + 1))
        echo ">>> $name: FAILED ($((SECONDS - start)) s)"
    fi
}

show_logs() { # make check writes the programs' output to logs
    local rc=0
    make -C build -j2 check || rc=$?
    cat build/test/engine/*.log
    return $rc
}

suite "engine unit and differential tests (10^6 operations per backend)" show_logs

sanitized() {
    make -C build-asan -j2 -s test/engine/unit_tests test/engine/differential_tests &&
        build-asan/test/engine/unit_tests &&
        build-asan/test/engine/differential_tests --ops 200000
}
suite "engine tests under ASan+UBSan" sanitized

# MPI tests under mpirun, with every backend, then once over TCP (the path
# between hosts) with the default backend (auto).
. scripts/env.sh
backends=$(build/examples/engine_demo --list-backends)
suite "component checks (ompi_info, bad settings, coll/ubermatch)" \
    test/mpi/check-component.sh build/examples/mpi/pingpong_demo "$(echo $backends | sed 's/ /, /g')" \
    build/examples/mpi/coll_demo
for backend in $backends; do
    suite "MPI tests, backend $backend" test/mpi/run-mpi-tests.sh build/test-mpi \
        --mca pml ubermatch --mca pml_ubermatch_backend "$backend"
done
# auto with thresholds that index every queue of two elements: the indexed
# forms and the changes between forms under real MPI traffic.
suite "MPI tests, backend auto indexing at 2 elements" test/mpi/run-mpi-tests.sh build/test-mpi \
    --mca pml ubermatch --mca pml_ubermatch_backend auto \
    --mca pml_ubermatch_index_at 2 --mca pml_ubermatch_list_at 1
suite "MPI tests over TCP (UCX_TLS=tcp,self)" test/mpi/run-mpi-tests.sh build/test-mpi \
    --mca pml ubermatch -x UCX_TLS=tcp,self
suite "proxy applications (np 4, colpnp, timers)" examples/proxies/smoke.sh build
# The package built (in a kept copy: only changes recompile), installed on this
# machine, an MPI run from the installed copy, removed.
suite "Debian package (build, lintian, install, MPI run, remove)" bash scripts/package-test.sh

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

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

# make check: the engine's and the protocol core's tests, and the MPI tests
# under mpirun --mca pml ubermatch (the default backend, auto) through
# test/mpi/run-one.sh, as for run-mpi-tests.sh below. It writes the programs'
# output to logs: the engine's and protocol's are shown whole, of the MPI tests'
# run-one.sh's verdict (the line before the one automake's driver appends), and
# on a failure automake's summary of it.
make_check() {
    local rc=0 log
    make -C build -j2 check || rc=$?
    cat build/test/engine/*.log build/test/protocol/*.log
    for log in build/test/mpi/*.log; do tail -n 2 "$log" | head -n 1; done
    [ $rc -eq 0 ] || cat build/test-suite.log
    return $rc
}

suite "make check: engine unit and differential tests (10^6 operations per backend), protocol tests, MPI tests (backend auto)" make_check

# The sanitized build reports a bool out of range without stopping (configure.ac
# says why); halt_on_error makes it fatal at run time.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
sanitized() {
    make -C build-asan -j2 -s test/engine/unit_tests test/engine/differential_tests &&
        build-asan/test/engine/unit_tests &&
        build-asan/test/engine/differential_tests --ops 200000
}
suite "engine tests under ASan+UBSan" sanitized
# The protocol core and the PML's glue under ASan+UBSan in real jobs: the
# components built so (all-local: the components alone, ~35 s on 2 cores, into
# build-asan/mca-components) in the MPI tests, the sanitizers' runtimes
# preloaded into the ranks. (The protocol core's own tests under ASan are left
# to a run by hand (README): their Catch2 sources take ~3 minutes to build so.)
sanitized_components() {
    make -C build-asan -j2 -s all-local &&
        test/mpi/run-mpi-tests-asan.sh build-asan build/test-mpi-asan --mca pml ubermatch
}
suite "MPI tests (backend auto) with the components under ASan+UBSan" sanitized_components
suite "tail queues, every backend, concurrent under TSan" test/engine/tailq_tsan.sh --ops 20000
# Binned tail queues: one receiver and one arriver (unexpected messages pile up
# across bins, so a wildcard's earliest message is a real choice), then three
# of each (more calls in parallel), then with 1% wildcards (bins mostly apart).
tailq_bins_tsan() {
    test/engine/tailq_tsan.sh --ops 20000 --bins 4 --receivers 1 --arrivers 1 &&
        test/engine/tailq_tsan.sh --ops 20000 --bins 4 --receivers 3 --arrivers 3 &&
        test/engine/tailq_tsan.sh --ops 20000 --bins 4 --receivers 3 --arrivers 3 --wildcards 0.01
}
suite "tail queues in 4 bins, every backend, concurrent under TSan" tailq_bins_tsan
suite "matching traces recorded from threads at once, under TSan" test/engine/trace_tsan.sh

# MPI tests under mpirun, with every backend, then once over TCP (the path
# between hosts) with the default backend (auto).
. scripts/env.sh
# bigmsg's 2 GiB messages (4.2 GB of memory, ~20 s) run once, in a suite of their own.
export BIGMSG_SKIP_HUGE=1
backends=$(build/examples/engine_demo --list-backends)
suite "component checks (ompi_info, bad settings, coll/ubermatch)" \
    test/mpi/check-component.sh build/examples/mpi/pingpong_demo "$(echo $backends | sed 's/ /, /g')" \
    build/examples/mpi/coll_demo
for backend in $backends; do
    [ "$backend" = auto ] && continue # make check ran them with auto
    suite "MPI tests, backend $backend" test/mpi/run-mpi-tests.sh build/test-mpi \
        --mca pml ubermatch --mca pml_ubermatch_backend "$backend"
done
# Pulls (pml_ubermatch_shm_pull, on in every suite above): they carry
# pingpong's messages from 12 KiB (verbose 1 counts them), up to
# pml_ubermatch_shm_stage_max copied by the sender into shared memory the
# receiver maps, beyond it (or with it 0) read by CMA, and derived datatypes'
# from the sender's shared memory; off, the same tests take UCX's rendezvous
# within the node.
pulls() {
    local out rc=0
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 build/test/mpi/pingpong 2>&1)
    grep -qE 'rank 1: shared-memory rings: .*; [1-9][0-9]* sent and [1-9][0-9]* received as pulls \([0-9]+ sent while packed, [1-9][0-9]* of them contiguous data copied' <<<"$out" &&
        grep -q "PASS pingpong" <<<"$out" ||
        { echo "FAIL no contiguous message went as a staged pull"; echo "$out" | tail -5; rc=1; }
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 --mca pml_ubermatch_shm_stage_max 0 \
        build/test/mpi/pingpong 2>&1)
    grep -qE 'rank 1: shared-memory rings: .*; [1-9][0-9]* sent and [1-9][0-9]* received as pulls \(0 sent while packed, 0 of them' <<<"$out" &&
        grep -q "PASS pingpong" <<<"$out" ||
        { echo "FAIL with pml_ubermatch_shm_stage_max 0 no message went as a CMA pull"; echo "$out" | tail -5; rc=1; }
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 --mca pml_ubermatch_shm_pull 0 \
        build/test/mpi/pingpong 2>&1)
    grep -qE 'rank 1: shared-memory rings: .*; 0 sent and 0 received as pulls \(.*pml_ubermatch_shm_pull 0' <<<"$out" ||
        { echo "FAIL pml_ubermatch_shm_pull 0 still pulled"; echo "$out" | tail -5; rc=1; }
    # Derived datatypes: packed into the arena, strided ones while their record
    # is out, and the receiver unpacks from its mapping of it.
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 build/test/mpi/datatypes 2>&1)
    grep -qE 'rank 0: shared-memory rings: .* pulls \([1-9][0-9]* sent while packed' <<<"$out" &&
        grep -qE 'rank 1: shared-memory rings: .*, [1-9][0-9]* received from the sender.s shared memory' <<<"$out" &&
        grep -q "PASS datatypes" <<<"$out" ||
        { echo "FAIL datatypes' pulls were not packed while out or not read from the sender's shared memory"
          echo "$out" | tail -5; rc=1; }
    # Their rows (up to 64 KiB packed) through the stage or straight: measured,
    # both ways seen (2 of every 64 go the other way); never and always, one.
    grep -qE 'rank 0: shared-memory rings: .*; [1-9][0-9]* sent as rows packed through a stage, [1-9][0-9]* packed straight \(' <<<"$out" ||
        { echo "FAIL datatypes' rows did not go both ways under pml_ubermatch_shm_pack_stage measure"; rc=1; }
    for way in never always; do
        out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 --mca pml_ubermatch_shm_pack_stage $way \
            build/test/mpi/datatypes 2>&1)
        [ $way = never ] && want='0 sent as rows packed through a stage, [1-9][0-9]* packed straight \(' ||
            want='[1-9][0-9]* sent as rows packed through a stage, 0 packed straight \('
        grep -qE "rank 0: shared-memory rings: .*; $want" <<<"$out" && grep -q "PASS datatypes" <<<"$out" ||
            { echo "FAIL datatypes with pml_ubermatch_shm_pack_stage $way"; echo "$out" | tail -5; rc=1; }
    done
    # The same under MPI_THREAD_MULTIPLE: the sender with the ring's packing slot streams.
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_verbose 1 -x MPITEST_THREAD_MULTIPLE=1 \
        build/test/mpi/datatypes 2>&1)
    grep -qE 'rank 0: shared-memory rings: .* pulls \([1-9][0-9]* sent while packed' <<<"$out" &&
        grep -q "PASS datatypes" <<<"$out" ||
        { echo "FAIL datatypes under MPI_THREAD_MULTIPLE: pulls not packed while out"; echo "$out" | tail -5; rc=1; }
    MPI_TESTS_ONLY="pingpong truncation probe ssend persistent" \
        test/mpi/run-mpi-tests.sh build/test-mpi --mca pml ubermatch --mca pml_ubermatch_shm_stage_max 0 || rc=1
    MPI_TESTS_ONLY="pingpong datatypes truncation probe ssend persistent alloc_faults" \
        test/mpi/run-mpi-tests.sh build/test-mpi --mca pml ubermatch --mca pml_ubermatch_shm_pull 0 || rc=1
    return $rc
}
suite "pulls from 12 KiB (staged up to shm_stage_max, else CMA); off, UCX's rendezvous within the node" pulls
# Info assertions ignored (pml_ubermatch_assertions ignore: full engines, no
# refusals; the default honour runs in every backend's suite above), a few seconds.
# Open MPI's one-sided over the PML (osc/pt2pt) instead of osc/rdma: it reads
# the status of the sends it completes, as ob1 fills it.
suite "MPI test rma with osc/pt2pt (Open MPI's one-sided over the PML)" env MPI_TESTS_ONLY=rma \
    test/mpi/run-mpi-tests.sh build/test-mpi --mca pml ubermatch --mca osc pt2pt
# Open MPI's coll/adapt first (bcast and reduce in segments driven by completion
# callbacks that free their requests): the collectives test's results, and its
# repeated rounds must not grow the PML's requests.
suite "MPI test collectives with coll/adapt (requests freed in completion callbacks)" \
    env MPI_TESTS_ONLY=collectives test/mpi/run-mpi-tests.sh build/test-mpi --mca pml ubermatch --mca coll_adapt_priority 100
suite "MPI test: info assertions, pml_ubermatch_assertions ignore" env MPI_TESTS_ONLY=assertions \
    test/mpi/run-mpi-tests.sh build/test-mpi --mca pml ubermatch --mca pml_ubermatch_assertions ignore
# The assertions test makes 90 refused calls: each fails, the first 8 of a
# process print a line naming the assertion, the 8th says no more will.
refusals() {
    local out n
    out=$(timeout 60 mpirun --oversubscribe -np 2 --mca pml ubermatch build/test/mpi/assertions 2>&1) || return 1
    n=$(grep -c "on .*, which asserts mpi_assert_no_any_\(source\|tag\): MPI_ERR_\(RANK\|TAG\)" <<<"$out")
    echo "refusal lines: $n"
    [ "$n" -eq 8 ] && grep -q "MPI_ERR_.* (this process prints no further refusals; each still fails its call)" <<<"$out" &&
        grep -q "PASS assertions (" <<<"$out" || return 1
    # A relaxed backend chosen for every communicator: probe's MPI_ANY_SOURCE
    # fails (the test with it), and the line names the backend and its parameter.
    out=$(timeout 60 mpirun --oversubscribe -np 3 --mca pml ubermatch --mca pml_ubermatch_backend exact \
        build/test/mpi/probe 2>&1) && { echo "FAIL MPI_ANY_SOURCE taken by backend exact"; return 1; }
    grep "MPI_ANY_SOURCE receive or probe on MPI_COMM_WORLD, whose engine is exact (pml_ubermatch_backend), which takes no MPI_ANY_SOURCE: MPI_ERR_RANK" <<<"$out" &&
        grep -q "MPI_Probe(MPI_ANY_SOURCE.*MPI_ERR_RANK" <<<"$out"
}
suite "refused wildcards: the first 8 of a process printed, naming the assertion or the backend" refusals
# MPI_THREAD_MULTIPLE with tail queues (pml_ubermatch_threading tailq): the
# ordering test with every backend wrapped in them, both thread tests with the
# default, and a check that the tail queues were the ones in use (~40 s).
tailq_mpi() {
    local b rc=0
    for b in $backends; do
        MPI_TESTS_ONLY=thread_order test/mpi/run-mpi-tests.sh build/test-mpi \
            --mca pml ubermatch --mca pml_ubermatch_backend "$b" --mca pml_ubermatch_threading tailq || rc=1
    done
    MPI_TESTS_ONLY=threads test/mpi/run-mpi-tests.sh build/test-mpi \
        --mca pml ubermatch --mca pml_ubermatch_threading tailq || rc=1
    for b in auto list; do # in 8 bins
        MPI_TESTS_ONLY="thread_order threads" test/mpi/run-mpi-tests.sh build/test-mpi \
            --mca pml ubermatch --mca pml_ubermatch_backend "$b" --mca pml_ubermatch_threading tailq \
            --mca pml_ubermatch_tailq_bins 8 || rc=1
    done
    local out # whole, then searched: grep -q on the pipe would end mpirun early (pipefail)
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_threading tailq \
        --mca pml_ubermatch_verbose 1 build/test/mpi/thread_order 2>&1)
    grep -q 'multiple (tail queues) threads (1 bin' <<<"$out" ||
        { echo "FAIL tail queues not in use under MPI_THREAD_MULTIPLE"; echo "$out" | tail -5; rc=1; }
    grep -qE 'rank 1: shared-memory rings: [1-9][0-9]* messages sent' <<<"$out" ||
        { echo "FAIL no message through a shared-memory ring under MPI_THREAD_MULTIPLE"; echo "$out" | tail -5; rc=1; }
    out=$(test/mpi/run-one.sh --mca pml ubermatch --mca pml_ubermatch_threading tailq --mca pml_ubermatch_tailq_bins 8 \
        --mca pml_ubermatch_verbose 1 build/test/mpi/thread_order 2>&1)
    grep -q 'multiple (tail queues) threads (8 bin' <<<"$out" ||
        { echo "FAIL tail queues in 8 bins not in use"; echo "$out" | tail -5; rc=1; }
    return $rc
}
suite "MPI thread tests with tail queues, every backend" tailq_mpi
# auto with thresholds that index every queue of two elements: the indexed
# forms and the changes between forms under real MPI traffic.
suite "MPI tests, backend auto indexing at 2 elements" test/mpi/run-mpi-tests.sh build/test-mpi \
    --mca pml ubermatch --mca pml_ubermatch_backend auto \
    --mca pml_ubermatch_index_at 2 --mca pml_ubermatch_list_at 1
# Every 5th allocation on the message path fails: the receives concerned end
# with MPI_ERR_NO_MEM, every other message arrives whole and in order.
injected() {
    MPI_TESTS_ONLY=alloc_faults test/mpi/run-mpi-tests.sh build/test-mpi-faults \
        --mca pml ubermatch --mca pml_ubermatch_inject_alloc_failure 5 -x ALLOC_FAULTS_ARGS=--expect-failures
}
suite "MPI test with allocation failures injected" injected
huge() {
    env -u BIGMSG_SKIP_HUGE MPI_TESTS_ONLY=bigmsg MPI_TESTS_TIMEOUT=180 test/mpi/run-mpi-tests.sh build/test-mpi-big \
        --mca pml ubermatch
}
suite "MPI test: messages of 2^31-1 B and 2100 MiB" huge
suite "MPI tests over TCP (UCX_TLS=tcp,self, no shared-memory rings)" test/mpi/run-mpi-tests.sh build/test-mpi \
    --mca pml ubermatch --mca pml_ubermatch_shm_eager_limit 0 -x UCX_TLS=tcp,self
suite "fault tests (a rank killed while its peers wait on it)" test/faults/run.sh build/faults
# The errors a completing call returns come with a line naming them on stderr,
# which the C test cannot read: every rank's must be there.
am_main() {
    local out
    out=$(timeout 60 mpirun -np 4 --mca pml ubermatch build/mpix_am_test 2>&1) || { echo "$out" | tail -n 20; return 1; }
    echo "$out" | tail -n 1
    for line in "an AM handler returned 16 (MPI_ERR_OTHER" "MPIX_Am: handler 99 unknown or of the other kind" \
        "an AM's target location lay outside every region attached to the target's dynamic window" \
        "MPIX_Am: an AM with a derived datatype goes whole, and its 2000 segments of 32 bytes"; do
        [ "$(echo "$out" | grep -cF "mpix_am: $line")" -ge 4 ] ||
            { echo "no line \"mpix_am: $line\" from each of the 4 ranks"; return 1; }
    done
}
suite "active messages (np 4, MPIX_Am/MPIX_Amv: fence, lock/flush, PSCW, Fig. 3 detach, progress in MPI_Recv, bad input, error lines)" \
    am_main
# The same through UCX with every message a rendezvous one (pml/ubermatch's arrival
# hook cannot take them: place holders keep their order), and without the hook (probes,
# as under another PML).
suite "active messages, every message a UCX rendezvous (np 4)" \
    timeout 60 mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_shm_eager_limit 0 \
    --mca pml_ubermatch_ucx_rndv_thresh 64 build/mpix_am_test
suite "active messages without pml/ubermatch's arrival hook (np 4, MPIX_AM_NO_PML_HOOKS)" \
    timeout 60 mpirun -np 4 -x MPIX_AM_NO_PML_HOOKS=1 --mca pml ubermatch build/mpix_am_test
suite "active messages served only inside the intercepted calls, as under another MPI (np 4, MPIX_AM_NO_PROGRESS_HOOK)" \
    timeout 60 mpirun -np 4 -x MPIX_AM_NO_PROGRESS_HOOK=1 --mca pml ubermatch build/mpix_am_test
# Random epochs of random AMs, every output and count checked: seeds 1-3 through
# the shared-memory rings, 4-5 with every message a UCX rendezvous one, 6 without
# the progress hook (the epochs in whose calls MPI waits for no other rank).
am_random() {
    local seed rndv
    for seed in 1 2 3 4 5; do
        rndv=
        [ $seed -ge 4 ] && rndv="--mca pml_ubermatch_shm_eager_limit 0 --mca pml_ubermatch_ucx_rndv_thresh 64"
        # shellcheck disable=SC2086
        timeout 60 mpirun -np 4 --mca pml ubermatch $rndv build/mpix_am_random_test 300 $seed || return 1
    done
    timeout 60 mpirun -np 4 -x MPIX_AM_NO_PROGRESS_HOOK=1 --mca pml ubermatch build/mpix_am_random_test 300 6 served
}
suite "active messages at random (np 4, 6 seeds of 300 epochs: fence, lock_all, locks, PSCW, flushes, Accumulate, buffers swapped)" \
    am_random
suite "active messages under MPI_THREAD_MULTIPLE (np 4, 3 threads a rank: own windows, one shared, a target in MPI_Recv)" \
    timeout 60 mpirun -np 4 --mca pml ubermatch build/mpix_am_thread_test 3
suite "active messages under MPI_THREAD_MULTIPLE without the arrival hook (np 3, 4 threads a rank)" \
    timeout 60 mpirun -np 3 -x MPIX_AM_NO_PML_HOOKS=1 --mca pml ubermatch build/mpix_am_thread_test 4
suite "active messages under MPI_THREAD_MULTIPLE and ThreadSanitizer (np 3, 4 threads a rank, with and without the hook)" \
    am/tsan-threads.sh build
suite "active messages under AddressSanitizer and UBSan (np 4: the test program, the random test with two seeds)" \
    am/asan.sh build
suite "proxy applications (np 4, colpnp, timers)" examples/proxies/smoke.sh build
suite "matching traces: record fds (np 4), replay through every backend, bad input" replay/test-replay.sh build

# The GPU engine: built wherever configure found nvcc; its differential test
# runs only where a device is, and a skip is not counted as passed.
gpu=build/matching/gpu/gpu_match_test
if [ -x $gpu ]; then
    suite "GPU engine built (nvcc, sm_90), probe answers" $gpu --probe
    if $gpu --probe | grep -q 'device: usable'; then
        suite "GPU engine differential tests (10^6 matches per variant)" $gpu --check 1000000
    else
        echo ">>> GPU engine differential tests: skipped: no GPU (not counted)"
    fi
else
    echo ">>> GPU engine: not built (configure found no nvcc): skipped (not counted)"
fi
# Two hosts made of network namespaces on this machine; where none can be
# made (not root, no iproute2, a container without the capability): skipped.
if why=$(test/multihost/run.sh --probe); then
    suite "several hosts (2 network namespaces: every MPI test but rma, the fds proxy)" \
        env UM_MULTIHOST_TESTS=all test/multihost/run.sh build
else
    echo ">>> several hosts: $why (not counted)"
fi
# The package built (in a kept copy: only changes recompile), installed on this
# machine, an MPI run from the installed copy, removed.
suite "Debian package (build, lintian, install, MPI run, remove)" bash scripts/package-test.sh

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

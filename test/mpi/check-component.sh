#!/usr/bin/env bash
# Checks of the component as a user meets it: ompi_info lists every MCA
# parameter with its description and valid values, and bad settings stop
# start-up with a message that names the valid choices.
# usage: test/mpi/check-component.sh PROGRAM "list, perpeer, ..."
#   PROGRAM: an MPI program to start (e.g. pingpong_demo); then the registered
#   backends as the engine names them (engine_demo --list-backends, joined by ", ").
set -uo pipefail
program=${1:?usage: check-component.sh PROGRAM BACKENDS}
backends=${2:?usage: check-component.sh PROGRAM BACKENDS}
failed=0
check() { # description, command...
    local what=$1
    shift
    if "$@"; then
        echo "PASS $what"
    else
        echo "FAIL $what"
        failed=1
    fi
}

info=$(ompi_info --param pml ubermatch --level 9 2>&1)
for param in backend bins kernel compact_threshold theta k_c k_p verbose print_stats ucx_tls ucx_rndv_thresh priority; do
    check "ompi_info lists pml_ubermatch_$param" grep -q "parameter \"pml_ubermatch_$param\"" <<<"$info"
done
check "ompi_info names the valid backends" grep -qF "Valid values: $backends" <<<"$info"
check "ompi_info lists the pvars" grep -q 'performance "pml_ubermatch_posted_length"' <<<"$info"
check "ompi_info lists the false-positive pvar" grep -q 'performance "pml_ubermatch_false_positives"' <<<"$info"
check "ompi_info reports the SIMD kernel of this CPU" grep -Eq 'informational "pml_ubermatch_kernel_detected" \(current value: "(avx512|avx2|scalar)"' <<<"$info"
check "ompi_info names the valid kernels" grep -qF "Valid values: auto, avx512, avx2, scalar" <<<"$info"

# An unknown backend aborts start-up and names the valid ones.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend hashmap "$program" 2>&1)
rc=$?
check "unknown backend fails start-up" test $rc -ne 0
check "unknown backend names the valid ones" grep -qF "unknown matching backend 'hashmap'; valid backends are: $backends" <<<"$out"

# A parameter out of range is refused with its range.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend bins --mca pml_ubermatch_bins 0 "$program" 2>&1)
rc=$?
check "bins = 0 fails start-up" test $rc -ne 0
check "bins = 0 names the valid range" grep -q "bins = 0 is out of range; valid values are 1 .. 1048576" <<<"$out"

# An unknown SIMD kernel is refused whatever the backend, with the valid ones.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_kernel sse9 "$program" 2>&1)
rc=$?
check "unknown kernel fails start-up" test $rc -ne 0
check "unknown kernel names the valid ones" grep -qF "unknown kernel 'sse9'; valid kernels are: auto, avx512, avx2, scalar" <<<"$out"

# Collective traffic reaches the engine as collective (negative tags give the hint),
# and print_stats reports what each engine did.
out=$(timeout 60 mpirun -np 3 --mca pml ubermatch --mca pml_ubermatch_print_stats 1 "$program" 2>&1)
check "print_stats reports every rank's MPI_COMM_WORLD engine" test "$(grep -c 'MPI_COMM_WORLD (cid 0), engine' <<<"$out")" -eq 3
check "collective messages carry the collective hint" grep -Eq '[1-9][0-9]* collective\)' <<<"$out"
check "point-to-point messages carry none" grep -Eq '\([1-9][0-9]* p2p' <<<"$out"

# A good setting runs.
out=$(timeout 60 mpirun -np 2 --mca pml ubermatch --mca pml_ubermatch_backend bins --mca pml_ubermatch_bins 7 "$program" 2>&1)
check "bins = 7 runs" test $? -eq 0

exit $failed

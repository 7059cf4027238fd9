#!/usr/bin/env bash
# The MPI tests with the components of a build configured --enable-sanitizers
# (ASan+UBSan: the protocol core and the PML's glue checked in real MPI jobs).
#
# usage: test/mpi/run-mpi-tests-asan.sh SANITIZED_BUILD LOG_DIR [extra mpirun args...]
#   e.g. test/mpi/run-mpi-tests-asan.sh build-asan /tmp/asan-mpi --mca pml ubermatch
#
# Open MPI and the test programs are not instrumented (the programs are the
# optimized build's, UM_BUILD as for run-mpi-tests.sh); only the components
# are, so the sanitizers' runtimes are preloaded into each rank, and the
# sanitized components given to the ranks alone: ompi_info (which `make` may
# run to reconfigure) keeps the optimized build's, since a sanitized library
# fails to load where its runtime is not first. Leak checks are off (Open MPI
# keeps memory to the end by design); every other report aborts the rank,
# which fails its test. The last line is run-mpi-tests.sh's
# "mpi tests: N passed, M failed".
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SANITIZED_BUILD LOG_DIR [mpirun args...]" >&2; exit 2; }
san=$(cd "$1" && pwd)
shift
[ -f "$san/mca-components/mca_pml_ubermatch.so" ] ||
    { echo "no sanitized components in $san/mca-components (make -C $san all)" >&2; exit 2; }
grep -q -- '-fsanitize=address' "$san/Makefile" ||
    { echo "$san was not configured with --enable-sanitizers" >&2; exit 2; }
runtimes=
for lib in libasan.so libubsan.so; do
    path=$(gcc -print-file-name=$lib)
    [ -f "$path" ] || { echo "no $lib from gcc -print-file-name" >&2; exit 2; }
    runtimes=${runtimes:+$runtimes:}$path
done
cd "$(dirname "$0")/../.."
. scripts/env.sh >/dev/null
sys=$(ompi_info --parsable --path pkglibdir | sed 's/.*pkglibdir://')
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# -x overrides, in the ranks alone, the component path env.sh exported.
exec test/mpi/run-mpi-tests.sh "$@" -x LD_PRELOAD="$runtimes" \
    -x OMPI_MCA_mca_base_component_path="$san/mca-components:$sys"

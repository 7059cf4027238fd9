#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs an MPI program under
# `mpirun --mca pml ubermatch` with every engine backend, printing what each
# engine did (search depths, queue lengths, queues, bytes), then reads the
# engine's MPI_T performance variables.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
. scripts/env.sh

backends=$(./build/examples/engine_demo --list-backends)
for backend in $backends; do
    echo "=== mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_backend $backend"
    mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_backend "$backend" \
        --mca pml_ubermatch_print_stats 1 ./build/examples/mpi/pingpong_demo 2>&1 |
        grep -v 'cid 1)' # MPI_COMM_SELF: no traffic worth a line
done

echo "=== MPI_T performance variables of the engine (mpit_queues --check, backend bins)"
mpirun -np 3 --mca pml ubermatch --mca pml_ubermatch_backend bins ./build/examples/mpi/mpit_queues --check

/*
 * coll_demo: collectives of known sizes, for watching what coll/ubermatch
 * reports to the ubermatch PML:
 *   mpirun -np 4 --mca pml ubermatch --mca pml_ubermatch_verbose 3 \
 *          --mca pml_ubermatch_print_stats 1 ./coll_demo
 * On MPI_COMM_WORLD: MPI_Allreduce of 1000 doubles (8000 bytes), MPI_Bcast of
 * 256 ints (1024 bytes), then MPI_Iallreduce of 500 ints (2000 bytes) waited
 * on after a MPI_Barrier (its messages flow after the call returned, some of
 * them inside the barrier). Works on any PML and any number of ranks; results
 * are checked, exit code 1 on any error.
 */
#include <mpi.h>
#include <stdio.h>

enum { NDBL = 1000, NBCAST = 256, NINT = 500 };

int main(int argc, char **argv)
{
    static double d[NDBL], dsum[NDBL];
    static int b[NBCAST], v[NINT], vsum[NINT];
    int rank, size, errors = 0;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (int i = 0; i < NDBL; i++)
        d[i] = rank + i;
    MPI_Allreduce(d, dsum, NDBL, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < NDBL; i++)
        errors += dsum[i] != (double) size * (size - 1) / 2 + (double) size * i;

    for (int i = 0; i < NBCAST; i++)
        b[i] = rank == 0 ? 3 * i : -1;
    MPI_Bcast(b, NBCAST, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < NBCAST; i++)
        errors += b[i] != 3 * i;

    for (int i = 0; i < NINT; i++)
        v[i] = rank + 1;
    MPI_Iallreduce(v, vsum, NINT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < NINT; i++)
        errors += vsum[i] != size * (size + 1) / 2;

    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("coll_demo: %d ranks, Allreduce 8000 B, Bcast 1024 B, Iallreduce 2000 B: %d errors, %s\n",
               size, errors, errors ? "FAILED" : "OK");
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}

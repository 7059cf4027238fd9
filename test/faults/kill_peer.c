/* kill_peer: a rank is killed (SIGKILL) while its peers wait on it; the job
 * must end with Open MPI's error, not hang. 3 ranks.
 *
 * Rank 2 dies after a barrier. Rank 0 waits in a blocking MPI_Recv from rank
 * 2 (the PML's own wait loop); rank 1 has a 4 MiB rendezvous MPI_Isend to
 * rank 2 and an MPI_Irecv from it pending and waits in MPI_Waitall (Open
 * MPI's request wait). Nothing may complete: reaching the end is a failure
 * (exit 3). test/faults/run.sh checks that mpirun exits non-zero in bounded
 * time and says why.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (rank == 0)
            fprintf(stderr, "kill_peer: needs 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 2) {
        usleep(200000); /* let the others block first */
        raise(SIGKILL);
    } else if (rank == 0) {
        MPI_Recv(&v, 1, MPI_INT, 2, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        size_t n = 4u << 20;
        char *big = calloc(n, 1);
        MPI_Request r[2];
        MPI_Isend(big, (int)n, MPI_CHAR, 2, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&v, 1, MPI_INT, 2, 0, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        free(big);
    }
    fprintf(stderr, "kill_peer: rank %d completed a call that depends on a killed rank\n", rank);
    MPI_Finalize();
    return 3;
}

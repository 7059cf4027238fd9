/* idle_peers: 8-byte ping-pong latency between ranks 0 and 1 while every other
 * rank of the job waits idle (asleep, looking for its "done" message every
 * 10 ms). Before timing, every pair of ranks exchanges one message, so that
 * each rank has a shared-memory ring (or its PML's equivalent) from every
 * other: what is measured is what those idle peers cost a busy rank's wait
 * (docs/message-path.md, round 9).
 *
 *   mpirun -np 64 --oversubscribe --bind-to none --mca mpi_yield_when_idle 0 \
 *       --mca pml ubermatch build/bench/mpi/idle_peers [--iters N] [--rounds R]
 *
 * Oversubscribed, Open MPI makes every PML's wait yield the core on an empty
 * round (mpi_yield_when_idle), which costs a system call per round here, where
 * the idle ranks sleep: turn it off to measure the PML. Prints a line per
 * round: np=N round=R latency_us=X (one way, the round trip halved). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_PING = 1, TAG_DONE = 2, TAG_HELLO = 7 };

static long arg_long(int argc, char **argv, const char *name, long fallback, long lo, long hi)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            char *end;
            const long v = strtol(argv[i + 1], &end, 10);
            if (*end != '\0' || v < lo || v > hi) {
                fprintf(stderr, "idle_peers: %s must be an integer in %ld..%ld, not '%s'\n", name, lo, hi,
                        argv[i + 1]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            return v;
        }
    }
    return fallback;
}

int main(int argc, char **argv)
{
    int rank, np;
    char b[8] = { 0 };
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const long iters = arg_long(argc, argv, "--iters", 100000, 1, 1000000000);
    const long rounds = arg_long(argc, argv, "--rounds", 5, 1, 1000);
    if (np < 2) {
        if (rank == 0)
            fprintf(stderr, "idle_peers: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    for (int p = 0; p < np; p++)
        if (p != rank)
            MPI_Sendrecv(b, 8, MPI_CHAR, p, TAG_HELLO, b, 8, MPI_CHAR, p, TAG_HELLO, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank >= 2) {
        int done = 0;
        while (!done) {
            usleep(10000);
            MPI_Iprobe(0, TAG_DONE, MPI_COMM_WORLD, &done, MPI_STATUS_IGNORE);
        }
        MPI_Recv(b, 8, MPI_CHAR, 0, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        const int peer = 1 - rank;
        for (long r = 0; r < rounds; r++) {
            const double t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                if (rank == 0) {
                    MPI_Send(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD);
                    MPI_Recv(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(b, 8, MPI_CHAR, peer, TAG_PING, MPI_COMM_WORLD);
                }
            }
            const double us = (MPI_Wtime() - t0) / (double) iters / 2 * 1e6;
            if (rank == 0)
                printf("np=%d round=%ld latency_us=%.3f\n", np, r, us);
        }
        if (rank == 0)
            for (int p = 2; p < np; p++)
                MPI_Send(b, 8, MPI_CHAR, p, TAG_DONE, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

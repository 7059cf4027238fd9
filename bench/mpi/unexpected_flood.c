/* unexpected_flood: N unexpected messages from several senders held by one
 * receiver, then drained in order; the memory they took.
 *
 *   mpirun -np P ./unexpected_flood [N]        (default N = 1000000, P >= 2)
 *
 * Ranks 1..P-1 send N/(P-1) 8-byte messages each (payload: sender, sequence)
 * to rank 0 with tag = sequence % 32768, then enter a barrier; rank 0 enters
 * the barrier at once, so every message arrives unexpected (held by the PML),
 * and records its resident memory before and after. It then receives all N
 * with MPI_ANY_SOURCE / MPI_ANY_TAG and checks that each sender's messages
 * come in the order sent. Prints one line:
 *   unexpected_flood: N=... senders=... held_bytes=... bytes_per_message=... drain_s=... drain_rate=... order=ok
 * Exit code 1 on an order or count error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || n < size - 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P>=2 unexpected_flood [N >= P-1]\n");
        MPI_Finalize();
        return 2;
    }
    long per = n / (size - 1);
    n = per * (size - 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        for (long i = 0; i < per; i++) {
            int64_t m[1] = {((int64_t)rank << 40) | i};
            MPI_Send(m, 1, MPI_INT64_T, 0, (int)(i % 32768), MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        long before = rss_kib();
        MPI_Barrier(MPI_COMM_WORLD); /* every message arrives before this returns */
        long after = rss_kib();
        long *next = calloc((size_t)size, sizeof(long));
        double t0 = MPI_Wtime();
        for (long k = 0; k < n; k++) {
            int64_t m;
            MPI_Status st;
            MPI_Recv(&m, 1, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int src = (int)(m >> 40);
            long seq = (long)(m & ((INT64_C(1) << 40) - 1));
            if (src != st.MPI_SOURCE || seq != next[src] || st.MPI_TAG != (int)(seq % 32768)) {
                if (bad++ < 5)
                    fprintf(stderr, "unexpected_flood: from %d (status %d) sequence %ld, expected %ld\n", src,
                            st.MPI_SOURCE, seq, next[src]);
            }
            next[src] = seq + 1;
        }
        double dt = MPI_Wtime() - t0;
        printf("unexpected_flood: N=%ld senders=%d held_bytes=%ld bytes_per_message=%.1f drain_s=%.3f "
               "drain_rate=%.0f order=%s\n",
               n, size - 1, (after - before) * 1024, (double)(after - before) * 1024.0 / (double)n, dt,
               (double)n / dt, bad ? "WRONG" : "ok");
        free(next);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}

/*
 * pingpong_demo: a small point-to-point workload for any PML
 * (e.g. mpirun --mca pml ubermatch -np 4 ./pingpong_demo). Works with 1 or more ranks.
 *
 * Every round, each rank talks to its ring neighbours (right = rank+1, left = rank-1):
 *  - pre-posted: receives from the left posted before the left sends (exact source
 *    and MPI_ANY_SOURCE, one of them with MPI_ANY_TAG);
 *  - unexpected: a burst of UNEX messages sent before the right neighbour posts a
 *    receive, then received in reverse tag order (exact or MPI_ANY_SOURCE);
 *  - a token passed around the whole ring, alternately exact and MPI_ANY_SOURCE.
 * Every payload is checked; rank 0 prints a summary. Exit code 1 on any error.
 */
#include <mpi.h>
#include <stdio.h>

enum { ROUNDS = 20, UNEX = 16, TAG_PRE = 1, TAG_UNEX = 100, TAG_TOKEN = 7 };

static int errors = 0;
static long received = 0;

/* payload: sender, tag, round, index */
static void expect(const int *m, const MPI_Status *st, int src, int tag, int round, int idx) {
    received++;
    if (m[0] != src || m[1] != tag || m[2] != round || m[3] != idx || st->MPI_SOURCE != src ||
        st->MPI_TAG != tag) {
        if (errors++ < 5)
            fprintf(stderr, "bad message: got {%d,%d,%d,%d} from %d tag %d, want {%d,%d,%d,%d}\n", m[0], m[1],
                    m[2], m[3], st->MPI_SOURCE, st->MPI_TAG, src, tag, round, idx);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st[2];

    for (int r = 0; r < ROUNDS; r++) {
        /* Pre-posted: both receives exist before the left neighbour sends (barrier). */
        int in[2][4], out[2][4] = {{rank, TAG_PRE, r, 0}, {rank, TAG_PRE + 1, r, 1}};
        MPI_Request rq[4];
        MPI_Irecv(in[0], 4, MPI_INT, left, TAG_PRE, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(in[1], 4, MPI_INT, MPI_ANY_SOURCE, r % 2 ? MPI_ANY_TAG : TAG_PRE + 1, MPI_COMM_WORLD, &rq[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Isend(out[0], 4, MPI_INT, right, TAG_PRE, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(out[1], 4, MPI_INT, right, TAG_PRE + 1, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(2, rq, st);
        expect(in[0], &st[0], left, TAG_PRE, r, 0);
        expect(in[1], &st[1], left, TAG_PRE + 1, r, 1);
        MPI_Waitall(2, rq + 2, MPI_STATUSES_IGNORE);

        /* Unexpected: the burst is sent before the right neighbour posts anything. */
        int burst[UNEX][4], msg[4];
        MPI_Request brq[UNEX];
        for (int k = 0; k < UNEX; k++) {
            burst[k][0] = rank, burst[k][1] = TAG_UNEX + k, burst[k][2] = r, burst[k][3] = k;
            MPI_Isend(burst[k], 4, MPI_INT, right, TAG_UNEX + k, MPI_COMM_WORLD, &brq[k]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = UNEX - 1; k >= 0; k--) { /* reverse order: deepest search first */
            int src = (k + r) % 3 == 0 ? MPI_ANY_SOURCE : left;
            MPI_Recv(msg, 4, MPI_INT, src, TAG_UNEX + k, MPI_COMM_WORLD, &st[0]);
            expect(msg, &st[0], left, TAG_UNEX + k, r, k);
        }
        MPI_Waitall(UNEX, brq, MPI_STATUSES_IGNORE);

        /* Token around the ring: rank 0 starts it, every rank adds its rank. */
        int token[4] = {rank, TAG_TOKEN, r, 0};
        int src = r % 2 ? MPI_ANY_SOURCE : left;
        if (rank == 0) {
            MPI_Send(token, 4, MPI_INT, right, TAG_TOKEN, MPI_COMM_WORLD);
            MPI_Recv(msg, 4, MPI_INT, src, TAG_TOKEN, MPI_COMM_WORLD, &st[0]);
            expect(msg, &st[0], left, TAG_TOKEN, r, size * (size - 1) / 2);
        } else {
            MPI_Recv(msg, 4, MPI_INT, src, TAG_TOKEN, MPI_COMM_WORLD, &st[0]);
            expect(msg, &st[0], left, TAG_TOKEN, r, (rank - 1) * rank / 2);
            token[3] = msg[3] + rank;
            MPI_Send(token, 4, MPI_INT, right, TAG_TOKEN, MPI_COMM_WORLD);
        }
    }

    int total_errors = 0;
    long total_received = 0;
    MPI_Reduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&received, &total_received, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pingpong_demo: %d ranks, %d rounds, %ld messages checked (pre-posted, unexpected, token ring; "
               "exact and MPI_ANY_SOURCE receives): %d errors, %s\n",
               size, ROUNDS, total_received, total_errors, total_errors ? "FAILED" : "OK");
    MPI_Bcast(&total_errors, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}

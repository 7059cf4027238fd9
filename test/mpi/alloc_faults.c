/* alloc_faults: allocation failures on the message path become an error of
 * the receive concerned and of nothing else. 2 ranks.
 *
 * Rank 0 sends N messages of 200 bytes (kept on the heap when unexpected),
 * N of 8 bytes (kept inline), alternating, with tags 0..2N-1, then 4 messages
 * of 1 MiB (rendezvous) that rank 1 receives into a strided type (so through
 * scratch memory, never made to fail: see deliver_rndv). Rank 1 sleeps first, so the small ones wait as unexpected
 * messages, then receives everything in order with MPI_ERRORS_RETURN. Every
 * receive must either succeed with the right tag, length and data, or fail
 * with MPI_ERR_NO_MEM; with `--expect-failures` (the test command runs it so
 * under pml_ubermatch_inject_alloc_failure) some must have failed, else none.
 */
#include "mpitest.h"

enum { N = 400, BIG_INTS = 1 << 18, BIGS = 4 };

int main(int argc, char **argv)
{
    const char *args = getenv("ALLOC_FAULTS_ARGS"); /* the runner passes no arguments */
    int expect_failures = (argc > 1 && strcmp(argv[1], "--expect-failures") == 0) ||
                          (args != NULL && strcmp(args, "--expect-failures") == 0);
    long ok = 0, nomem = 0;
    mt_init(&argc, &argv, "alloc_faults", 2);
    /* rank 0 sends from here while rank 1 sleeps: without it a rank 0 started
     * late (a loaded machine) found rank 1's receives posted, nothing unexpected */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (mt_rank == 0) {
        unsigned char buf[200];
        int *big = mt_malloc(sizeof(int) * BIG_INTS * BIGS);
        for (int t = 0; t < 2 * N; t++) {
            size_t n = t % 2 ? 8 : sizeof buf;
            mt_fill(buf, n, mt_seed(3, (uint64_t)t, n, 0));
            MPI_CHECK(MPI_Send(buf, (int)n, MPI_BYTE, 1, t, MPI_COMM_WORLD));
        }
        for (int b = 0; b < BIGS; b++) {
            int *mine = big + (size_t)b * BIG_INTS;
            for (int i = 0; i < BIG_INTS; i++)
                mine[i] = i + b;
            MPI_CHECK(MPI_Send(mine, BIG_INTS, MPI_INT, 1, 100000 + b, MPI_COMM_WORLD));
            if (getenv("ALLOC_FAULTS_DEBUG"))
                memset(mine, 0x7f, sizeof(int) * BIG_INTS); /* a send that completed early shows */
        }
        free(big);
    } else if (mt_rank == 1) {
        unsigned char buf[200];
        int *big = mt_malloc(sizeof(int) * 2 * BIG_INTS);
        MPI_Datatype strided;
        MPI_CHECK(MPI_Type_vector(BIG_INTS, 1, 2, MPI_INT, &strided));
        MPI_CHECK(MPI_Type_commit(&strided));
        mt_sleep_ms(300); /* the small messages arrive unexpected */
        for (int t = 0; t < 2 * N + BIGS; t++) {
            MPI_Status st;
            int big_one = t >= 2 * N, rc, cls;
            int tag = big_one ? 100000 + (t - 2 * N) : t;
            size_t n = big_one ? sizeof(int) * BIG_INTS : (t % 2 ? 8 : sizeof buf);
            if (big_one)
                rc = MPI_Recv(big, 1, strided, 0, tag, MPI_COMM_WORLD, &st);
            else
                rc = MPI_Recv(buf, (int)sizeof buf, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            if (rc != MPI_SUCCESS) {
                CHECK(cls == MPI_ERR_NO_MEM, "receive of tag %d failed with %s, expected success or "
                      "MPI_ERR_NO_MEM", tag, mt_errstr(rc));
                nomem++;
                if (getenv("ALLOC_FAULTS_DEBUG"))
                    fprintf(stderr, "tag %d: MPI_ERR_NO_MEM\n", tag);
                continue;
            }
            CHECK(st.MPI_TAG == tag && mt_count_bytes(&st) == (int)n,
                  "tag %d: status tag %d, %d bytes (expected %zu)", tag, st.MPI_TAG, mt_count_bytes(&st), n);
            if (big_one) {
                for (int i = 0; i < BIG_INTS; i++)
                    CHECK(big[2 * i] == i + (t - 2 * N), "tag %d: element %d is %d", tag, i, big[2 * i]);
            } else {
                CHECK(mt_check(buf, n, mt_seed(3, (uint64_t)t, n, 0)) < 0, "tag %d: data differs", tag);
            }
            ok++;
        }
        MPI_CHECK(MPI_Type_free(&strided));
        free(big);
        if (expect_failures)
            CHECK(nomem > 0, "no receive failed, though allocations were made to fail");
        else
            CHECK(nomem == 0, "%ld receives failed with MPI_ERR_NO_MEM, though no allocation was made to fail",
                  nomem);
    }
    MPI_CHECK(MPI_Bcast(&ok, 1, MPI_LONG, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(&nomem, 1, MPI_LONG, 1, MPI_COMM_WORLD));
    return mt_finish("%ld receives complete and correct, %ld failed with MPI_ERR_NO_MEM, none lost%s", ok, nomem,
                     expect_failures ? " (allocation failures injected)" : "");
}

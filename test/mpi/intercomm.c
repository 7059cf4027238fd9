/* intercomm: point-to-point on intercommunicators, >= 2 ranks (run with 5:
 * groups of 3 and 2).
 *
 * MPI_COMM_WORLD is split into even (group A) and odd (group B) ranks and
 * joined with MPI_Intercomm_create. Checked:
 *  - MPI_Comm_test_inter, local and remote sizes;
 *  - ping-pong between local rank i of A and rank i of B (0 B, 64 B, 1 MiB),
 *    status.MPI_SOURCE must be the remote-group rank, content verified;
 *  - every rank of B sends to rank 0 of A, which probes and receives them
 *    with MPI_ANY_SOURCE (each remote rank exactly once, MPI_SOURCE equal to
 *    the remote rank in the payload); and the same from A to rank 0 of B;
 *  - a message on an MPI_Comm_dup of the intercommunicator;
 *  - intercommunicator collectives: MPI_Barrier, MPI_Bcast (root in A,
 *    64 KiB), MPI_Allreduce (each group gets the sum over the other group);
 *  - MPI_Intercomm_merge (B high): ranks A then B, and a ring exchange on the
 *    merged communicator with MPI_SOURCE and content checked.
 * MPI calls: Comm_split, Intercomm_create, Comm_test_inter, Comm_remote_size,
 * Send, Recv, Isend, Irecv, Waitall, Probe, Comm_dup, Barrier, Bcast,
 * Allreduce, Intercomm_merge, Sendrecv, Comm_free.
 */
#include "mpitest.h"

static long checked = 0;

static void check_buf(const unsigned char *b, size_t n, uint64_t seed, const MPI_Status *st, int src, int tag,
                      const char *what)
{
    CHECK(st->MPI_SOURCE == src, "%s (%zu bytes): MPI_SOURCE %d, expected remote rank %d", what, n, st->MPI_SOURCE,
          src);
    CHECK(st->MPI_TAG == tag, "%s (%zu bytes): MPI_TAG %d, expected %d", what, n, st->MPI_TAG, tag);
    CHECK(mt_count_bytes(st) == (int)n, "%s (%zu bytes): count %d", what, n, mt_count_bytes(st));
    long bad = mt_check(b, n, seed);
    CHECK(bad < 0, "%s (%zu bytes): byte %ld wrong", what, n, bad);
    checked++;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "intercomm", 2);
    int color = mt_rank % 2; /* 0: group A (even), 1: group B (odd) */
    MPI_Comm local, inter;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, mt_rank, &local));
    int lrank, lsize;
    MPI_CHECK(MPI_Comm_rank(local, &lrank));
    MPI_CHECK(MPI_Comm_size(local, &lsize));
    MPI_CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 77, &inter));
    MPI_CHECK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));

    int flag = 0, rsize = 0, sizeA = (mt_size + 1) / 2, sizeB = mt_size / 2;
    MPI_CHECK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "MPI_Comm_test_inter says the intercommunicator is not one");
    MPI_CHECK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(lsize == (color ? sizeB : sizeA) && rsize == (color ? sizeA : sizeB),
          "group sizes: local %d remote %d, expected %d %d", lsize, rsize, color ? sizeB : sizeA,
          color ? sizeA : sizeB);

    /* ping-pong between rank i of A and rank i of B */
    size_t sizes[3] = {0, 64, 1 << 20};
    unsigned char *sb = mt_malloc(1 << 20), *rb = mt_malloc(1 << 20);
    MPI_Status st;
    if (lrank < (lsize < rsize ? lsize : rsize)) {
        for (int s = 0; s < 3; s++)
            for (int it = 0; it < 3; it++) {
                size_t n = sizes[s];
                int tag = 10 * s + it;
                uint64_t s_out = mt_seed(71, n, (uint64_t)it, (uint64_t)color);
                uint64_t s_in = mt_seed(71, n, (uint64_t)it, (uint64_t)(1 - color));
                mt_fill(sb, n, s_out);
                if (color == 0) {
                    MPI_CHECK(MPI_Send(sb, (int)n, MPI_BYTE, lrank, tag, inter));
                    MPI_CHECK(MPI_Recv(rb, (int)n, MPI_BYTE, lrank, tag, inter, &st));
                } else {
                    MPI_CHECK(MPI_Recv(rb, (int)n, MPI_BYTE, MPI_ANY_SOURCE, tag, inter, &st));
                    MPI_CHECK(MPI_Send(sb, (int)n, MPI_BYTE, lrank, tag, inter));
                }
                check_buf(rb, n, s_in, &st, lrank, tag, "intercomm ping-pong");
                /* nonblocking, both ways at once */
                MPI_Request req[2];
                MPI_Status sts[2];
                MPI_CHECK(MPI_Irecv(rb, (int)n, MPI_BYTE, lrank, tag + 100, inter, &req[0]));
                MPI_CHECK(MPI_Isend(sb, (int)n, MPI_BYTE, lrank, tag + 100, inter, &req[1]));
                MPI_CHECK(MPI_Waitall(2, req, sts));
                check_buf(rb, n, s_in, &sts[0], lrank, tag + 100, "intercomm Isend/Irecv");
            }
    }

    /* all of one group to rank 0 of the other, ANY_SOURCE */
    for (int dir = 0; dir < 2; dir++) {
        int sender_color = dir == 0 ? 1 : 0;
        if (color == sender_color) {
            int v[2] = {lrank, mt_rank};
            MPI_CHECK(MPI_Send(v, 2, MPI_INT, 0, 200 + dir, inter));
        } else if (lrank == 0) {
            char *seen = calloc((size_t)rsize, 1);
            CHECK(seen, "out of memory");
            for (int i = 0; i < rsize; i++) {
                MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 200 + dir, inter, &st));
                int src = st.MPI_SOURCE, v[2] = {-1, -1};
                CHECK(src >= 0 && src < rsize, "Probe on the intercommunicator: MPI_SOURCE %d, remote size %d", src,
                      rsize);
                MPI_CHECK(MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, 200 + dir, inter, &st));
                CHECK(st.MPI_SOURCE == v[0],
                      "ANY_SOURCE receive on the intercommunicator: MPI_SOURCE %d but the sender's remote-group rank "
                      "is %d (world rank %d)",
                      st.MPI_SOURCE, v[0], v[1]);
                CHECK(v[1] == 2 * v[0] + sender_color, "remote rank %d claims world rank %d", v[0], v[1]);
                CHECK(!seen[v[0]], "two messages from remote rank %d", v[0]);
                seen[v[0]] = 1;
                checked++;
            }
            free(seen);
        }
    }

    /* a duplicate of the intercommunicator */
    {
        MPI_Comm idup;
        MPI_CHECK(MPI_Comm_dup(inter, &idup));
        if (lrank == 0) {
            int x = color * 1000 + 7, y = -1;
            MPI_CHECK(MPI_Sendrecv(&x, 1, MPI_INT, 0, 5, &y, 1, MPI_INT, 0, 5, idup, &st));
            CHECK(y == (1 - color) * 1000 + 7 && st.MPI_SOURCE == 0, "MPI_Comm_dup of the intercommunicator: got %d "
                                                                   "from %d",
                  y, st.MPI_SOURCE);
            checked++;
        }
        MPI_CHECK(MPI_Comm_free(&idup));
    }

    /* intercommunicator collectives */
    MPI_CHECK(MPI_Barrier(inter));
    {
        size_t n = 64 << 10;
        uint64_t seed = mt_seed(72, n, 0, 0);
        int root;
        if (color == 0)
            root = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
        else
            root = 0;
        if (color == 0)
            mt_fill(sb, n, seed);
        else
            memset(rb, 0, n);
        MPI_CHECK(MPI_Bcast(color == 0 ? sb : rb, (int)n, MPI_BYTE, root, inter));
        if (color == 1) {
            CHECK(mt_check(rb, n, seed) < 0, "intercommunicator MPI_Bcast from group A: wrong data");
            checked++;
        }
        long mine = mt_rank + 1, other = 0, expect = 0;
        for (int r = 0; r < mt_size; r++)
            if (r % 2 != color)
                expect += r + 1;
        MPI_CHECK(MPI_Allreduce(&mine, &other, 1, MPI_LONG, MPI_SUM, inter));
        CHECK(other == expect, "intercommunicator MPI_Allreduce: got %ld, expected the remote group's sum %ld", other,
              expect);
        checked++;
    }

    /* merge: A low, B high */
    {
        MPI_Comm merged;
        MPI_CHECK(MPI_Intercomm_merge(inter, color == 1, &merged));
        MPI_CHECK(MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN));
        int mrank, msize;
        MPI_CHECK(MPI_Comm_rank(merged, &mrank));
        MPI_CHECK(MPI_Comm_size(merged, &msize));
        int expect_rank = color == 0 ? lrank : sizeA + lrank;
        CHECK(msize == mt_size && mrank == expect_rank, "merged communicator: rank %d of %d, expected %d of %d", mrank,
              msize, expect_rank, mt_size);
        int to = (mrank + 1) % msize, from = (mrank + msize - 1) % msize;
        int world_of_from = from < sizeA ? 2 * from : 2 * (from - sizeA) + 1;
        int v[2] = {mrank, mt_rank}, w[2] = {-1, -1};
        MPI_CHECK(MPI_Sendrecv(v, 2, MPI_INT, to, 9, w, 2, MPI_INT, from, 9, merged, &st));
        CHECK(st.MPI_SOURCE == from && w[0] == from && w[1] == world_of_from,
              "ring on the merged communicator: from %d (world %d) expected, got MPI_SOURCE %d payload (%d, %d)", from,
              world_of_from, st.MPI_SOURCE, w[0], w[1]);
        /* and a larger one with ANY_SOURCE */
        size_t n = 300000;
        mt_fill(sb, n, mt_seed(73, (uint64_t)mrank, 0, 0));
        MPI_Request req[2];
        MPI_Status sts[2];
        MPI_CHECK(MPI_Irecv(rb, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 10, merged, &req[0]));
        MPI_CHECK(MPI_Isend(sb, (int)n, MPI_BYTE, to, 10, merged, &req[1]));
        MPI_CHECK(MPI_Waitall(2, req, sts));
        check_buf(rb, n, mt_seed(73, (uint64_t)from, 0, 0), &sts[0], from, 10, "merged communicator ANY_SOURCE");
        checked++;
        MPI_CHECK(MPI_Comm_free(&merged));
    }

    free(sb);
    free(rb);
    MPI_CHECK(MPI_Comm_free(&inter));
    MPI_CHECK(MPI_Comm_free(&local));
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("groups of %d and %d: %ld checks (ping-pong with remote-group MPI_SOURCE, ANY_SOURCE+Probe, dup, "
                     "Barrier/Bcast/Allreduce on the intercomm, merge + ring)",
                     sizeA, sizeB, total);
}

/* coll_variants: the collectives `collectives` leaves out, each blocking and
 * nonblocking, so that every function a collective component forwards runs
 * once at least (coll/ubermatch wraps them all); >= 3 ranks (run with 5).
 *
 *  - MPI_COMM_WORLD: Allgatherv, Alltoallv, Alltoallw (MPI_INT and
 *    MPI_DOUBLE blocks), Gatherv, Scatter, Scatterv, Scan, Exscan,
 *    Reduce_scatter, Reduce_scatter_block, and their I-forms, counts
 *    differing per rank;
 *  - an Iallreduce left outstanding across a blocking Bcast and Allreduce
 *    (its later rounds progress inside them), then waited;
 *  - an intercommunicator (even / odd ranks of MPI_COMM_WORLD): Bcast, Reduce,
 *    Gather, Scatter with MPI_ROOT / MPI_PROC_NULL, Allreduce, Allgather,
 *    Alltoall, Barrier, and Ibcast, Iallreduce, Ibarrier;
 *  - a periodic 1-D Cartesian communicator: Neighbor_allgather(v),
 *    Neighbor_alltoall(v, w) and their I-forms (the left neighbour's block
 *    first, then the right's).
 * Every result is compared with values computed locally.
 * MPI calls: Comm_split, Intercomm_create, Cart_create, Comm_free, Wait and
 * the collectives above.
 */
#include "mpitest.h"

static long checks = 0;
static MPI_Request q;

/* The blocking call, or the nonblocking one and its wait. */
#define RUN(nb, blocking_call, nonblocking_call)        \
    do {                                                \
        if (nb) {                                       \
            MPI_CHECK(nonblocking_call);                \
            MPI_CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE)); \
        } else {                                        \
            MPI_CHECK(blocking_call);                   \
        }                                               \
        checks++;                                       \
    } while (0)

enum { MAXN = 64, MAXV = 3 * MAXN };

static void prefix(const int *counts, int n, int *displs)
{
    displs[0] = 0;
    for (int k = 1; k < n; k++)
        displs[k] = displs[k - 1] + counts[k - 1];
}

static void intra(int nb)
{
    const char *mode = nb ? "nonblocking" : "blocking";
    MPI_Comm c = MPI_COMM_WORLD;
    int r = mt_rank, n = mt_size;
    int sb[MAXV], rb[MAXV], counts[MAXN], rcounts[MAXN], sdispl[MAXN], rdispl[MAXN];

    /* Allgatherv: rank k gives k % 3 + 1 ints k*100+i */
    for (int k = 0; k < n; k++)
        counts[k] = k % 3 + 1;
    prefix(counts, n, rdispl);
    for (int i = 0; i < counts[r]; i++)
        sb[i] = r * 100 + i;
    RUN(nb, MPI_Allgatherv(sb, counts[r], MPI_INT, rb, counts, rdispl, MPI_INT, c),
        MPI_Iallgatherv(sb, counts[r], MPI_INT, rb, counts, rdispl, MPI_INT, c, &q));
    for (int k = 0; k < n; k++)
        for (int i = 0; i < counts[k]; i++)
            CHECK(rb[rdispl[k] + i] == k * 100 + i, "%s Allgatherv: from %d element %d is %d", mode, k,
                  i, rb[rdispl[k] + i]);

    /* Alltoallv: r sends (r + k) % 3 + 1 ints r*1000+k*10+j to k */
    for (int k = 0; k < n; k++) {
        counts[k] = (r + k) % 3 + 1;
        rcounts[k] = (k + r) % 3 + 1;
    }
    prefix(counts, n, sdispl);
    prefix(rcounts, n, rdispl);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < counts[k]; j++)
            sb[sdispl[k] + j] = r * 1000 + k * 10 + j;
    RUN(nb, MPI_Alltoallv(sb, counts, sdispl, MPI_INT, rb, rcounts, rdispl, MPI_INT, c),
        MPI_Ialltoallv(sb, counts, sdispl, MPI_INT, rb, rcounts, rdispl, MPI_INT, c, &q));
    for (int k = 0; k < n; k++)
        for (int j = 0; j < rcounts[k]; j++)
            CHECK(rb[rdispl[k] + j] == k * 1000 + r * 10 + j, "%s Alltoallv: from %d element %d is %d",
                  mode, k, j, rb[rdispl[k] + j]);

    /* Alltoallw: one value to each, an int or a double ((r + k) % 2), byte displacements */
    {
        double sw[MAXN], rw[MAXN];
        int ones[MAXN], sbytes[MAXN], rbytes[MAXN];
        MPI_Datatype types[MAXN];
        for (int k = 0; k < n; k++) {
            ones[k] = 1;
            types[k] = (r + k) % 2 ? MPI_DOUBLE : MPI_INT;
            sbytes[k] = rbytes[k] = k * (int)sizeof(double);
            if ((r + k) % 2)
                sw[k] = r + k / 4.0;
            else
                memcpy(&sw[k], &(int){r * 7 + k}, sizeof(int));
        }
        RUN(nb, MPI_Alltoallw(sw, ones, sbytes, types, rw, ones, rbytes, types, c),
            MPI_Ialltoallw(sw, ones, sbytes, types, rw, ones, rbytes, types, c, &q));
        for (int k = 0; k < n; k++) {
            if ((r + k) % 2) {
                CHECK(rw[k] == k + r / 4.0, "%s Alltoallw: double from %d is %g", mode, k, rw[k]);
            } else {
                int v;
                memcpy(&v, &rw[k], sizeof(int));
                CHECK(v == k * 7 + r, "%s Alltoallw: int from %d is %d", mode, k, v);
            }
        }
    }

    /* Gatherv to 2 % n: rank k gives k % 3 + 1 ints */
    {
        int root = 2 % n;
        for (int k = 0; k < n; k++)
            counts[k] = k % 3 + 1;
        prefix(counts, n, rdispl);
        for (int i = 0; i < counts[r]; i++)
            sb[i] = r * 10 + i + 5;
        RUN(nb, MPI_Gatherv(sb, counts[r], MPI_INT, rb, counts, rdispl, MPI_INT, root, c),
            MPI_Igatherv(sb, counts[r], MPI_INT, rb, counts, rdispl, MPI_INT, root, c, &q));
        if (r == root)
            for (int k = 0; k < n; k++)
                for (int i = 0; i < counts[k]; i++)
                    CHECK(rb[rdispl[k] + i] == k * 10 + i + 5, "%s Gatherv: from %d element %d is %d",
                          mode, k, i, rb[rdispl[k] + i]);
    }

    /* Scatter from 0: 3 ints to each; Scatterv from n-1: k % 2 + 1 ints to k */
    for (int k = 0; k < n; k++)
        for (int j = 0; j < 3; j++)
            sb[3 * k + j] = k * 10 + j;
    RUN(nb, MPI_Scatter(sb, 3, MPI_INT, rb, 3, MPI_INT, 0, c),
        MPI_Iscatter(sb, 3, MPI_INT, rb, 3, MPI_INT, 0, c, &q));
    for (int j = 0; j < 3; j++)
        CHECK(rb[j] == r * 10 + j, "%s Scatter: element %d is %d", mode, j, rb[j]);
    for (int k = 0; k < n; k++)
        counts[k] = k % 2 + 1;
    prefix(counts, n, sdispl);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < counts[k]; j++)
            sb[sdispl[k] + j] = k * 10 + j + 1;
    RUN(nb, MPI_Scatterv(sb, counts, sdispl, MPI_INT, rb, counts[r], MPI_INT, n - 1, c),
        MPI_Iscatterv(sb, counts, sdispl, MPI_INT, rb, counts[r], MPI_INT, n - 1, c, &q));
    for (int j = 0; j < counts[r]; j++)
        CHECK(rb[j] == r * 10 + j + 1, "%s Scatterv: element %d is %d", mode, j, rb[j]);

    /* Scan and Exscan, MPI_SUM of (k + 1) * (i + 1) over the ranks k before */
    {
        long v[4], s[4];
        for (int i = 0; i < 4; i++)
            v[i] = (long)(r + 1) * (i + 1);
        RUN(nb, MPI_Scan(v, s, 4, MPI_LONG, MPI_SUM, c), MPI_Iscan(v, s, 4, MPI_LONG, MPI_SUM, c, &q));
        for (int i = 0; i < 4; i++)
            CHECK(s[i] == (long)(r + 1) * (r + 2) / 2 * (i + 1), "%s Scan: element %d is %ld", mode, i,
                  s[i]);
        RUN(nb, MPI_Exscan(v, s, 4, MPI_LONG, MPI_SUM, c),
            MPI_Iexscan(v, s, 4, MPI_LONG, MPI_SUM, c, &q));
        if (r > 0)
            for (int i = 0; i < 4; i++)
                CHECK(s[i] == (long)r * (r + 1) / 2 * (i + 1), "%s Exscan: element %d is %ld", mode, i,
                      s[i]);
    }

    /* Reduce_scatter (k % 2 + 1 to k) and Reduce_scatter_block (2 each): element e of
     * rank k is k + e, so the sum is n e + n (n - 1) / 2 */
    {
        int total = 0;
        for (int k = 0; k < n; k++) {
            counts[k] = k % 2 + 1;
            total += counts[k];
        }
        prefix(counts, n, rdispl);
        for (int e = 0; e < total || e < 2 * n; e++)
            sb[e] = r + e;
        RUN(nb, MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, c),
            MPI_Ireduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, c, &q));
        for (int j = 0; j < counts[r]; j++) {
            int e = rdispl[r] + j;
            CHECK(rb[j] == n * e + n * (n - 1) / 2, "%s Reduce_scatter: element %d is %d", mode, j,
                  rb[j]);
        }
        RUN(nb, MPI_Reduce_scatter_block(sb, rb, 2, MPI_INT, MPI_SUM, c),
            MPI_Ireduce_scatter_block(sb, rb, 2, MPI_INT, MPI_SUM, c, &q));
        for (int j = 0; j < 2; j++) {
            int e = 2 * r + j;
            CHECK(rb[j] == n * e + n * (n - 1) / 2, "%s Reduce_scatter_block: element %d is %d", mode,
                  j, rb[j]);
        }
    }
}

/* A nonblocking collective progresses inside blocking ones on the same communicator. */
static void overlapped(void)
{
    MPI_Comm c = MPI_COMM_WORLD;
    int r = mt_rank, n = mt_size;
    enum { N = 4096 }; /* 32 KiB of longs: several rounds */
    static long v[N], s[N];
    MPI_Request pending;
    for (int i = 0; i < N; i++)
        v[i] = (long)(r + 1) * (i % 97);
    MPI_CHECK(MPI_Iallreduce(v, s, N, MPI_LONG, MPI_SUM, c, &pending));
    int b = r == 1 ? 77 : -1, a = r + 1, as = 0;
    MPI_CHECK(MPI_Bcast(&b, 1, MPI_INT, 1, c));
    MPI_CHECK(MPI_Allreduce(&a, &as, 1, MPI_INT, MPI_SUM, c));
    MPI_CHECK(MPI_Wait(&pending, MPI_STATUS_IGNORE));
    CHECK(b == 77 && as == n * (n + 1) / 2, "overlapped Bcast / Allreduce: got %d and %d", b, as);
    for (int i = 0; i < N; i++)
        CHECK(s[i] == (long)n * (n + 1) / 2 * (i % 97), "overlapped Iallreduce: element %d is %ld", i,
              s[i]);
    checks += 3;
}

static void inter(void)
{
    int r = mt_rank, color = r % 2;
    MPI_Comm local, ic;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, r, &local));
    MPI_CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 33, &ic));
    int lr, rn;
    MPI_CHECK(MPI_Comm_rank(ic, &lr));
    MPI_CHECK(MPI_Comm_remote_size(ic, &rn));
    /* group 0 (even ranks) holds the root of the rooted calls: its local rank 0 */
    int root = color == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int sb[MAXV], rb[MAXV];

    for (int nb = 0; nb < 2; nb++) {
        const char *mode = nb ? "nonblocking" : "blocking";
        int v = root == MPI_ROOT ? 4242 + nb : -1;
        RUN(nb, MPI_Bcast(&v, 1, MPI_INT, root, ic), MPI_Ibcast(&v, 1, MPI_INT, root, ic, &q));
        if (color == 1)
            CHECK(v == 4242 + nb, "%s intercomm Bcast: got %d", mode, v);
        /* Allreduce: each group gets the sum over the other of (lr + 1) * (color + 1) */
        int mine = (lr + 1) * (color + 1), sum = 0;
        RUN(nb, MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, ic),
            MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, ic, &q));
        CHECK(sum == rn * (rn + 1) / 2 * (2 - color), "%s intercomm Allreduce: got %d", mode, sum);
        RUN(nb, MPI_Barrier(ic), MPI_Ibarrier(ic, &q));
    }
    /* Reduce and Gather to group 0's root, Scatter from it */
    int mine = lr + 10, sum = 0;
    MPI_CHECK(MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, root, ic));
    checks++;
    if (root == MPI_ROOT)
        CHECK(sum == rn * (rn - 1) / 2 + 10 * rn, "intercomm Reduce: got %d", sum);
    sb[0] = lr * 3;
    MPI_CHECK(MPI_Gather(sb, 1, MPI_INT, rb, 1, MPI_INT, root, ic));
    checks++;
    if (root == MPI_ROOT)
        for (int k = 0; k < rn; k++)
            CHECK(rb[k] == k * 3, "intercomm Gather: from %d got %d", k, rb[k]);
    for (int k = 0; k < MAXN; k++)
        sb[k] = k * 5 + 1;
    rb[0] = -1;
    MPI_CHECK(MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_INT, root, ic));
    checks++;
    if (color == 1)
        CHECK(rb[0] == lr * 5 + 1, "intercomm Scatter: got %d", rb[0]);
    /* Allgather and Alltoall across the groups */
    sb[0] = color * 100 + lr;
    MPI_CHECK(MPI_Allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, ic));
    checks++;
    for (int k = 0; k < rn; k++)
        CHECK(rb[k] == (1 - color) * 100 + k, "intercomm Allgather: from %d got %d", k, rb[k]);
    for (int k = 0; k < rn; k++)
        sb[k] = color * 1000 + lr * 10 + k;
    MPI_CHECK(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ic));
    checks++;
    for (int k = 0; k < rn; k++)
        CHECK(rb[k] == (1 - color) * 1000 + k * 10 + lr, "intercomm Alltoall: from %d got %d", k,
              rb[k]);
    MPI_CHECK(MPI_Comm_free(&ic));
    MPI_CHECK(MPI_Comm_free(&local));
}

static void neighbors(void)
{
    int n = mt_size, dims[1] = {n}, periods[1] = {1};
    MPI_Comm cart;
    int r;
    MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart));
    MPI_CHECK(MPI_Comm_rank(cart, &r));
    const int left = (r + n - 1) % n, right = (r + 1) % n;
    const int from[2] = {left, right};

    for (int nb = 0; nb < 2; nb++) {
        const char *mode = nb ? "nonblocking" : "blocking";
        int sb[8], rb[8], ones[2] = {1, 1}, twos[2] = {2, 2}, displ[2] = {0, 2};
        /* Neighbor_allgather: 2 ints r*10+j from each neighbour */
        sb[0] = r * 10;
        sb[1] = r * 10 + 1;
        RUN(nb, MPI_Neighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, cart),
            MPI_Ineighbor_allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, cart, &q));
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < 2; j++)
                CHECK(rb[2 * d + j] == from[d] * 10 + j, "%s Neighbor_allgather: neighbour %d got %d",
                      mode, d, rb[2 * d + j]);
        RUN(nb, MPI_Neighbor_allgatherv(sb, 2, MPI_INT, rb, twos, displ, MPI_INT, cart),
            MPI_Ineighbor_allgatherv(sb, 2, MPI_INT, rb, twos, displ, MPI_INT, cart, &q));
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < 2; j++)
                CHECK(rb[2 * d + j] == from[d] * 10 + j, "%s Neighbor_allgatherv: neighbour %d got %d",
                      mode, d, rb[2 * d + j]);
        /* Neighbor_alltoall: block d goes to neighbour d (left, right) */
        sb[0] = r * 100 + 0; /* to the left: it is that one's right neighbour's block */
        sb[1] = r * 100 + 1;
        RUN(nb, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart),
            MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, &q));
        /* from the left comes what it sent right (block 1), from the right its block 0 */
        CHECK(rb[0] == left * 100 + 1 && rb[1] == right * 100 + 0,
              "%s Neighbor_alltoall: got %d and %d", mode, rb[0], rb[1]);
        int d1[2] = {0, 1};
        RUN(nb, MPI_Neighbor_alltoallv(sb, ones, d1, MPI_INT, rb, ones, d1, MPI_INT, cart),
            MPI_Ineighbor_alltoallv(sb, ones, d1, MPI_INT, rb, ones, d1, MPI_INT, cart, &q));
        CHECK(rb[0] == left * 100 + 1 && rb[1] == right * 100 + 0,
              "%s Neighbor_alltoallv: got %d and %d", mode, rb[0], rb[1]);
        MPI_Aint bytes[2] = {0, sizeof(int)};
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};
        rb[0] = rb[1] = -1;
        RUN(nb, MPI_Neighbor_alltoallw(sb, ones, bytes, types, rb, ones, bytes, types, cart),
            MPI_Ineighbor_alltoallw(sb, ones, bytes, types, rb, ones, bytes, types, cart, &q));
        CHECK(rb[0] == left * 100 + 1 && rb[1] == right * 100 + 0,
              "%s Neighbor_alltoallw: got %d and %d", mode, rb[0], rb[1]);
    }
    MPI_CHECK(MPI_Comm_free(&cart));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "coll_variants", 3);
    CHECK(mt_size <= MAXN, "at most %d ranks", MAXN);
    intra(0);
    intra(1);
    overlapped();
    inter();
    neighbors();
    return mt_finish("%d ranks: %ld collective calls checked (v/w variants, scans, reduce_scatter, "
                     "overlapped nonblocking, intercommunicator, neighbourhood)",
                     mt_size, checks);
}

/* collectives: blocking and nonblocking collectives (which Open MPI's coll
 * components build on the PML's point-to-point), >= 2 ranks (run with 5, a
 * non-power of two), on MPI_COMM_WORLD and on a split communicator (even /
 * odd ranks).
 *
 * On each communicator:
 *  - before anything, every rank posts MPI_Irecv(ANY_SOURCE, ANY_TAG); after
 *    all the collectives it must still be incomplete (collective traffic must
 *    never match a user wildcard receive); after a final barrier each rank
 *    sends its ring successor a message, which that receive must get;
 *  - Barrier; Bcast 10 ints (root n-1) and 1 MiB (root 1); Reduce MPI_SUM on
 *    ints to root 0 and MPI_MAX on doubles to root n-1; Allreduce MPI_SUM of
 *    16 longs and of 131072 doubles (1 MiB, integer values so sums are exact)
 *    and MPI_MIN of ints; Gather (root 1), Allgather, Alltoall;
 *  - the nonblocking forms Ibarrier, Ibcast (small and 1 MiB), Ireduce,
 *    Iallreduce (small and 1 MiB), Igather, Iallgather, Ialltoall, each
 *    waited on its own, and then Ibcast + Iallreduce + Ialltoall + Ibarrier
 *    outstanding together, completed with one MPI_Waitall.
 * Then ROUNDS of Bcast (256 KiB, root turning) and Reduce on MPI_COMM_WORLD,
 * over which the PML's requests must not grow: coll/adapt (the test command
 * runs this test with it first too) frees its segments' requests inside their
 * completion callbacks, which lost each of them before 2026-11-29.
 * Every result is compared with values computed locally. No MPI_SUM on 8-bit
 * types (a known stock op bug) and no MPI_Comm_idup (known hang).
 * MPI calls: Comm_split, Irecv, Test, Send, Wait, Waitall and the collectives
 * above.
 */
#include "mpitest.h"

#define BIG (1 << 20)
#define NDBL (BIG / 8)

static long checks = 0;

static double dval(int rank, int i)
{
    return (double)((rank + 1) * 3 + (i % 1000)); /* small integers: exact sums */
}

static void run_on(MPI_Comm c, const char *cname)
{
    int r, n;
    MPI_CHECK(MPI_Comm_rank(c, &r));
    MPI_CHECK(MPI_Comm_size(c, &n));
    MPI_Status st;

    int sentinel[2] = {-1, -1};
    MPI_Request wild;
    MPI_CHECK(MPI_Irecv(sentinel, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &wild));

    unsigned char *big = mt_malloc(BIG);
    double *dv = mt_malloc(NDBL * sizeof(double)), *dres = mt_malloc(NDBL * sizeof(double));
    int *ibuf = mt_malloc(sizeof(int) * (size_t)(8 * n + 64)), *ires = mt_malloc(sizeof(int) * (size_t)(8 * n + 64));

    for (int nb = 0; nb < 2; nb++) {
        const char *mode = nb ? "nonblocking" : "blocking";
        MPI_Request q;
#define RUN(blocking_call, nonblocking_call)              \
    do {                                                  \
        if (nb) {                                         \
            MPI_CHECK(nonblocking_call);                  \
            MPI_CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));   \
        } else {                                          \
            MPI_CHECK(blocking_call);                     \
        }                                                 \
    } while (0)

        RUN(MPI_Barrier(c), MPI_Ibarrier(c, &q));

        /* bcast small */
        int small[10];
        for (int i = 0; i < 10; i++)
            small[i] = r == n - 1 ? 100 * nb + i * i : -1;
        RUN(MPI_Bcast(small, 10, MPI_INT, n - 1, c), MPI_Ibcast(small, 10, MPI_INT, n - 1, c, &q));
        for (int i = 0; i < 10; i++)
            CHECK(small[i] == 100 * nb + i * i, "%s %s Bcast of 10 ints: element %d is %d", cname, mode, i, small[i]);
        /* bcast 1 MiB */
        int root = 1 % n;
        uint64_t seed = mt_seed(91, (uint64_t)nb, (uint64_t)n, 0);
        if (r == root)
            mt_fill(big, BIG, seed);
        else
            memset(big, 0, BIG);
        RUN(MPI_Bcast(big, BIG, MPI_BYTE, root, c), MPI_Ibcast(big, BIG, MPI_BYTE, root, c, &q));
        CHECK(mt_check(big, BIG, seed) < 0, "%s %s Bcast of 1 MiB: byte %ld wrong", cname, mode,
              mt_check(big, BIG, seed));

        /* reduce */
        for (int i = 0; i < 8; i++)
            ibuf[i] = r * 3 + i;
        RUN(MPI_Reduce(ibuf, ires, 8, MPI_INT, MPI_SUM, 0, c), MPI_Ireduce(ibuf, ires, 8, MPI_INT, MPI_SUM, 0, c, &q));
        if (r == 0)
            for (int i = 0; i < 8; i++)
                CHECK(ires[i] == 3 * n * (n - 1) / 2 + n * i, "%s %s Reduce SUM: element %d is %d, expected %d", cname,
                      mode, i, ires[i], 3 * n * (n - 1) / 2 + n * i);
        double dm[4] = {r * 1.5, -r * 1.0, (r % 2) * 7.0, 2.0}, dmr[4];
        RUN(MPI_Reduce(dm, dmr, 4, MPI_DOUBLE, MPI_MAX, n - 1, c),
            MPI_Ireduce(dm, dmr, 4, MPI_DOUBLE, MPI_MAX, n - 1, c, &q));
        if (r == n - 1)
            CHECK(dmr[0] == (n - 1) * 1.5 && dmr[1] == 0.0 && dmr[2] == (n > 1 ? 7.0 : 0.0) && dmr[3] == 2.0,
                  "%s %s Reduce MAX: got %g %g %g %g", cname, mode, dmr[0], dmr[1], dmr[2], dmr[3]);

        /* allreduce small */
        long lv[16], lr[16];
        for (int i = 0; i < 16; i++)
            lv[i] = (long)(r + 1) * (i + 1);
        RUN(MPI_Allreduce(lv, lr, 16, MPI_LONG, MPI_SUM, c), MPI_Iallreduce(lv, lr, 16, MPI_LONG, MPI_SUM, c, &q));
        for (int i = 0; i < 16; i++)
            CHECK(lr[i] == (long)n * (n + 1) / 2 * (i + 1), "%s %s Allreduce SUM long: element %d is %ld", cname, mode,
                  i, lr[i]);
        int mn = 50 - r, mnr = 0;
        RUN(MPI_Allreduce(&mn, &mnr, 1, MPI_INT, MPI_MIN, c), MPI_Iallreduce(&mn, &mnr, 1, MPI_INT, MPI_MIN, c, &q));
        CHECK(mnr == 50 - (n - 1), "%s %s Allreduce MIN: %d", cname, mode, mnr);
        /* allreduce 1 MiB */
        for (int i = 0; i < NDBL; i++)
            dv[i] = dval(r, i);
        RUN(MPI_Allreduce(dv, dres, NDBL, MPI_DOUBLE, MPI_SUM, c),
            MPI_Iallreduce(dv, dres, NDBL, MPI_DOUBLE, MPI_SUM, c, &q));
        for (int i = 0; i < NDBL; i++) {
            double e = 0;
            for (int k = 0; k < n; k++)
                e += dval(k, i);
            if (dres[i] != e)
                FAIL("%s %s Allreduce SUM of 1 MiB of doubles: element %d is %g, expected %g", cname, mode, i, dres[i],
                     e);
        }

        /* gather (root 1 % n), 4 ints each */
        int groot = 1 % n;
        for (int i = 0; i < 4; i++)
            ibuf[i] = r * 100 + i;
        RUN(MPI_Gather(ibuf, 4, MPI_INT, ires, 4, MPI_INT, groot, c),
            MPI_Igather(ibuf, 4, MPI_INT, ires, 4, MPI_INT, groot, c, &q));
        if (r == groot)
            for (int k = 0; k < n; k++)
                for (int i = 0; i < 4; i++)
                    CHECK(ires[4 * k + i] == k * 100 + i, "%s %s Gather: from %d element %d is %d", cname, mode, k, i,
                          ires[4 * k + i]);
        /* allgather, 3 doubles each */
        double ag[3] = {r + 0.25, r + 0.5, r + 0.75}, *agr = dres;
        RUN(MPI_Allgather(ag, 3, MPI_DOUBLE, agr, 3, MPI_DOUBLE, c),
            MPI_Iallgather(ag, 3, MPI_DOUBLE, agr, 3, MPI_DOUBLE, c, &q));
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 3; i++)
                CHECK(agr[3 * k + i] == k + 0.25 * (i + 1), "%s %s Allgather: from %d element %d is %g", cname, mode, k,
                      i, agr[3 * k + i]);
        /* alltoall, 2 ints to each */
        for (int k = 0; k < n; k++)
            for (int j = 0; j < 2; j++)
                ibuf[2 * k + j] = r * 1000 + k * 10 + j;
        RUN(MPI_Alltoall(ibuf, 2, MPI_INT, ires, 2, MPI_INT, c),
            MPI_Ialltoall(ibuf, 2, MPI_INT, ires, 2, MPI_INT, c, &q));
        for (int k = 0; k < n; k++)
            for (int j = 0; j < 2; j++)
                CHECK(ires[2 * k + j] == k * 1000 + r * 10 + j, "%s %s Alltoall: from %d element %d is %d", cname, mode,
                      k, j, ires[2 * k + j]);
        checks += 12;
#undef RUN
    }

    /* several nonblocking collectives outstanding at once */
    {
        MPI_Request q[4];
        uint64_t seed = mt_seed(92, (uint64_t)n, 0, 0);
        if (r == 0)
            mt_fill(big, BIG, seed);
        for (int i = 0; i < NDBL; i++)
            dv[i] = dval(r, i + 7);
        for (int k = 0; k < n; k++)
            for (int j = 0; j < 2; j++)
                ibuf[2 * k + j] = r * 1000 + k * 10 + j + 5;
        MPI_CHECK(MPI_Ibcast(big, BIG, MPI_BYTE, 0, c, &q[0]));
        MPI_CHECK(MPI_Iallreduce(dv, dres, NDBL, MPI_DOUBLE, MPI_SUM, c, &q[1]));
        MPI_CHECK(MPI_Ialltoall(ibuf, 2, MPI_INT, ires, 2, MPI_INT, c, &q[2]));
        MPI_CHECK(MPI_Ibarrier(c, &q[3]));
        MPI_CHECK(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
        CHECK(mt_check(big, BIG, seed) < 0, "%s concurrent Ibcast: wrong data", cname);
        for (int i = 0; i < NDBL; i++) {
            double e = 0;
            for (int k = 0; k < n; k++)
                e += dval(k, i + 7);
            if (dres[i] != e)
                FAIL("%s concurrent Iallreduce: element %d is %g, expected %g", cname, i, dres[i], e);
        }
        for (int k = 0; k < n; k++)
            for (int j = 0; j < 2; j++)
                CHECK(ires[2 * k + j] == k * 1000 + r * 10 + j + 5, "%s concurrent Ialltoall: from %d element %d is %d",
                      cname, k, j, ires[2 * k + j]);
        checks += 4;
    }

    /* the wildcard receive posted first must not have matched anything */
    int flag = 1;
    MPI_CHECK(MPI_Test(&wild, &flag, &st));
    CHECK(!flag, "%s: the MPI_Irecv(ANY_SOURCE, ANY_TAG) posted before the collectives completed during them (source "
                 "%d tag %d): collective traffic matched a user receive",
          cname, st.MPI_SOURCE, st.MPI_TAG);
    MPI_CHECK(MPI_Barrier(c));
    int msg[2] = {r, 4242};
    MPI_CHECK(MPI_Send(msg, 2, MPI_INT, (r + 1) % n, 17, c));
    MPI_CHECK(MPI_Wait(&wild, &st));
    int from = (r + n - 1) % n;
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 17 && sentinel[0] == from && sentinel[1] == 4242,
          "%s: the wildcard receive got source %d tag %d payload (%d, %d), expected the ring message from %d", cname,
          st.MPI_SOURCE, st.MPI_TAG, sentinel[0], sentinel[1], from);
    checks++;

    free(big);
    free(dv);
    free(dres);
    free(ibuf);
    free(ires);
}

/* The repeated rounds; returns the requests gained (-1: not under ubermatch). */
static long long repeated(void)
{
    enum { ROUNDS = 200, WORDS = 65536 };
    int *b = mt_malloc(WORDS * sizeof(int)), provided;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    const long long before = mt_pml_requests();
    for (int i = 0; i < ROUNDS; i++) {
        const int root = i % mt_size;
        for (int k = 0; k < WORDS; k++) b[k] = mt_rank == root ? i + k : -1;
        MPI_CHECK(MPI_Bcast(b, WORDS, MPI_INT, root, MPI_COMM_WORLD));
        for (int k = 0; k < WORDS; k++) CHECK(b[k] == i + k, "round %d: Bcast word %d = %d", i, k, b[k]);
        int x = mt_rank + i, sum = 0;
        MPI_CHECK(MPI_Reduce(&x, &sum, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (mt_rank == root) CHECK(sum == mt_size * i + mt_size * (mt_size - 1) / 2, "round %d: Reduce %d", i, sum);
        checks += 2;
    }
    const long long after = mt_pml_requests();
    MPI_CHECK(MPI_T_finalize());
    free(b);
    CHECK(after - before <= 128, "requests grew from %lld to %lld over %d rounds of Bcast and Reduce (lost?)", before,
          after, ROUNDS);
    return before < 0 ? -1 : after - before;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "collectives", 2);
    run_on(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm half;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &half)); /* reversed rank order */
    char name[64];
    int hs;
    MPI_CHECK(MPI_Comm_size(half, &hs));
    snprintf(name, sizeof name, "split communicator (%s ranks, size %d)", mt_rank % 2 ? "odd" : "even", hs);
    run_on(half, name);
    MPI_CHECK(MPI_Comm_free(&half));
    const long long gained = repeated();
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("%d ranks: %ld collective results checked on MPI_COMM_WORLD and a split communicator (blocking, "
                     "nonblocking, 4 outstanding at once; bcast/allreduce at 1 MiB); wildcard receive untouched by "
                     "collective traffic; requests gained over the repeated rounds: %lld (-1: no pvar)",
                     mt_size, total, gained);
}

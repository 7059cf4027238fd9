/* persistent: persistent requests reused over many iterations, 2 ranks (with
 * more, ranks pair up 0-1, 2-3, ...; even ranks send; an odd last rank idles).
 *
 *  1. Send_init / Recv_init, MPI_Start + MPI_Wait (receiver alternates Wait
 *     and a Test loop), 400 iterations at 64 B and 60 at 256 KiB; the send
 *     buffer is refilled with a per-iteration pattern before every Start.
 *  2. Both ranks MPI_Startall([Recv_init, Send_init]) + Waitall, exchanging in
 *     both directions at once, 200 iterations at 1 KiB and 30 at 200 KiB.
 *  3. Ssend_init, 200 iterations at 16 B and 30 at 128 KiB.
 *  4. Bsend_init with MPI_Buffer_attach (room for every iteration), 200
 *     iterations at 1 KiB and 40 at 64 KiB; the user buffer is overwritten
 *     right after each Wait, and the receiver must still see the old data.
 *  5. Rsend_init: the receiver MPI_Starts its Recv_init, then sends a ready
 *     message on another communicator; only then the sender Starts its Rsend.
 *     200 iterations at 32 B and 30 at 100 KiB.
 *  6. A Startall of mixed kinds (Recv_init, Send_init, Ssend_init), 100 times.
 *  7. Recv_init(ANY_SOURCE, ANY_TAG): the tag changes every iteration and the
 *     status must follow it.
 *  8. Inactive requests: MPI_Wait and MPI_Test on a never-started and on a
 *     completed persistent request return at once with an empty status
 *     (MPI_ANY_SOURCE, MPI_ANY_TAG, count 0); MPI_Request_free of inactive
 *     persistent requests (never started, and used) sets MPI_REQUEST_NULL,
 *     and a freed Recv_init(ANY_SOURCE, ANY_TAG) must not swallow a later
 *     message.
 *  9. Freed while active: 200 times the receiver Starts a Recv_init, frees it
 *     and only then lets the sender Start its Send_init (64 B, every 2nd time
 *     64 KiB, a pull its receiver hands back later; each in a buffer of its
 *     own) and free it; a plain message on the same tag follows (the
 *     receiver's Recv of it can only match once the freed receive has). The
 *     PML's requests (pvar pml_ubermatch_requests) must come back: at most 128
 *     more (a freed active request never released: 200 more at the receiver).
 * 10. Many receives in one Startall (the PML posts a run of them as one batch):
 *     80 Recv_init, each of its own tag (every 3rd ANY_SOURCE), sizes in runs
 *     (64 B, then 8 KiB, then 40 KiB: runs of one size and changes between);
 *     the sender sends half of the messages before the Startall (they wait
 *     unexpected) and half after, in a shuffled order; each receive must get
 *     its own message, intact; 30 rounds.
 * MPI calls: Send_init, Recv_init, Ssend_init, Bsend_init, Rsend_init, Start,
 * Startall, Wait, Waitall, Test, Request_free, Buffer_attach/detach.
 */
#include "mpitest.h"

static MPI_Comm ctl;
static long checked = 0;
static int peer;

static uint64_t seed_of(int test, size_t size, int it, int from)
{
    return mt_seed((uint64_t)test, size, (uint64_t)it, (uint64_t)from);
}

static void check_recv(const unsigned char *buf, const MPI_Status *st, size_t size, uint64_t seed, int tag,
                       const char *what, int it)
{
    CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == tag, "%s size %zu iteration %d: source %d tag %d, expected %d %d",
          what, size, it, st->MPI_SOURCE, st->MPI_TAG, peer, tag);
    int n = mt_count_bytes(st);
    CHECK(n == (int)size, "%s size %zu iteration %d: count %d", what, size, it, n);
    long bad = mt_check(buf, size, seed);
    CHECK(bad < 0, "%s size %zu iteration %d: byte %ld wrong (stale data from an earlier iteration?)", what, size, it,
          bad);
    checked++;
}

static void check_empty(const MPI_Status *st, const char *what)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && n == 0,
          "%s: expected an empty status (source %d, tag %d, count 0), got source %d tag %d count %d", what,
          MPI_ANY_SOURCE, MPI_ANY_TAG, st->MPI_SOURCE, st->MPI_TAG, n);
}

/* 1 (Send_init), 3 (Ssend_init), 4 (Bsend_init), 5 (Rsend_init): rank 0 sends */
static void one_way(int test, size_t size, int iters)
{
    const char *names[] = {"", "Send_init", "", "Ssend_init", "Bsend_init", "Rsend_init"};
    int tag = 100 + test;
    unsigned char *buf = mt_malloc(size);
    MPI_Request req;
    MPI_Status st;
    void *abuf = NULL;
    int asize = 0;
    if (mt_rank % 2 == 0) {
        if (test == 1)
            MPI_CHECK(MPI_Send_init(buf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req));
        else if (test == 3)
            MPI_CHECK(MPI_Ssend_init(buf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req));
        else if (test == 4) {
            asize = iters * ((int)size + MPI_BSEND_OVERHEAD) + 4096;
            abuf = mt_malloc((size_t)asize);
            MPI_CHECK(MPI_Buffer_attach(abuf, asize));
            MPI_CHECK(MPI_Bsend_init(buf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req));
        } else
            MPI_CHECK(MPI_Rsend_init(buf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req));
        for (int it = 0; it < iters; it++) {
            mt_fill(buf, size, seed_of(test, size, it, 0));
            if (test == 5)
                MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, it % 1000, ctl, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Start(&req));
            MPI_CHECK(MPI_Wait(&req, &st));
            CHECK(req != MPI_REQUEST_NULL, "%s: MPI_Wait freed a persistent request", names[test]);
            if (test == 4) /* buffered: the data were copied, the user buffer is free */
                memset(buf, 0xEE, size);
        }
        MPI_CHECK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL, "%s: MPI_Request_free did not set MPI_REQUEST_NULL", names[test]);
        if (test == 4) {
            void *p;
            int n;
            MPI_CHECK(MPI_Buffer_detach(&p, &n));
            CHECK(p == abuf && n == asize, "Buffer_detach returned %p/%d, attached %p/%d", p, n, abuf, asize);
            free(abuf);
        }
    } else {
        MPI_CHECK(MPI_Recv_init(buf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req));
        for (int it = 0; it < iters; it++) {
            memset(buf, 0, size);
            MPI_CHECK(MPI_Start(&req));
            if (test == 5) /* the receive is posted: the ready-send may start */
                MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, it % 1000, ctl));
            if (it % 2 == 0) {
                MPI_CHECK(MPI_Wait(&req, &st));
            } else {
                int flag = 0;
                while (!flag)
                    MPI_CHECK(MPI_Test(&req, &flag, &st));
            }
            CHECK(req != MPI_REQUEST_NULL, "Recv_init: completion freed a persistent request");
            check_recv(buf, &st, size, seed_of(test, size, it, 0), tag, names[test], it);
        }
        MPI_CHECK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL, "Recv_init: MPI_Request_free did not set MPI_REQUEST_NULL");
    }
    free(buf);
}

/* 2: both directions at once with Startall */
static void exchange(size_t size, int iters)
{
    unsigned char *sbuf = mt_malloc(size), *rbuf = mt_malloc(size);
    MPI_Request req[2];
    MPI_Status st[2];
    MPI_CHECK(MPI_Recv_init(rbuf, (int)size, MPI_BYTE, peer, 200, MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Send_init(sbuf, (int)size, MPI_BYTE, peer, 200, MPI_COMM_WORLD, &req[1]));
    for (int it = 0; it < iters; it++) {
        mt_fill(sbuf, size, seed_of(2, size, it, (int)mt_rank));
        memset(rbuf, 0, size);
        MPI_CHECK(MPI_Startall(2, req));
        MPI_CHECK(MPI_Waitall(2, req, st));
        check_recv(rbuf, &st[0], size, seed_of(2, size, it, peer), 200, "Startall exchange", it);
    }
    for (int i = 0; i < 2; i++)
        MPI_CHECK(MPI_Request_free(&req[i]));
    free(sbuf);
    free(rbuf);
}

/* 6: mixed kinds in one Startall. Rank 0: recv A, send B, ssend C; rank 1:
 * recv B, recv C, send A. */
static void mixed(int iters)
{
    enum { SA = 64, SB = 5000, SC = 70000 };
    unsigned char *a = mt_malloc(SA), *b = mt_malloc(SB), *c = mt_malloc(SC);
    MPI_Request req[3];
    MPI_Status st[3];
    if (mt_rank % 2 == 0) {
        MPI_CHECK(MPI_Recv_init(a, SA, MPI_BYTE, peer, 61, MPI_COMM_WORLD, &req[0]));
        MPI_CHECK(MPI_Send_init(b, SB, MPI_BYTE, peer, 62, MPI_COMM_WORLD, &req[1]));
        MPI_CHECK(MPI_Ssend_init(c, SC, MPI_BYTE, peer, 63, MPI_COMM_WORLD, &req[2]));
    } else {
        MPI_CHECK(MPI_Recv_init(b, SB, MPI_BYTE, peer, 62, MPI_COMM_WORLD, &req[0]));
        MPI_CHECK(MPI_Recv_init(c, SC, MPI_BYTE, peer, 63, MPI_COMM_WORLD, &req[1]));
        MPI_CHECK(MPI_Send_init(a, SA, MPI_BYTE, peer, 61, MPI_COMM_WORLD, &req[2]));
    }
    for (int it = 0; it < iters; it++) {
        if (mt_rank % 2 == 0) {
            mt_fill(b, SB, seed_of(6, SB, it, 0));
            mt_fill(c, SC, seed_of(6, SC, it, 0));
            memset(a, 0, SA);
        } else {
            mt_fill(a, SA, seed_of(6, SA, it, 1));
            memset(b, 0, SB);
            memset(c, 0, SC);
        }
        MPI_CHECK(MPI_Startall(3, req));
        MPI_CHECK(MPI_Waitall(3, req, st));
        if (mt_rank % 2 == 0) {
            check_recv(a, &st[0], SA, seed_of(6, SA, it, 1), 61, "mixed Startall", it);
        } else {
            check_recv(b, &st[0], SB, seed_of(6, SB, it, 0), 62, "mixed Startall", it);
            check_recv(c, &st[1], SC, seed_of(6, SC, it, 0), 63, "mixed Startall", it);
        }
    }
    for (int i = 0; i < 3; i++)
        MPI_CHECK(MPI_Request_free(&req[i]));
    free(a);
    free(b);
    free(c);
}

/* 7: wildcard persistent receive */
static void wildcard(int iters)
{
    unsigned char buf[256] = {0};
    MPI_Request req;
    MPI_Status st;
    if (mt_rank % 2 == 0) {
        MPI_CHECK(MPI_Send_init(buf, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &req)); /* unused: freed at once */
        MPI_CHECK(MPI_Request_free(&req));
        for (int it = 0; it < iters; it++) {
            size_t size = (size_t)(it * 7) % 256;
            mt_fill(buf, size, seed_of(7, size, it, 0));
            MPI_CHECK(MPI_Send(buf, (int)size, MPI_BYTE, peer, 300 + it % 5, MPI_COMM_WORLD));
        }
    } else {
        MPI_CHECK(MPI_Recv_init(buf, 256, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
        for (int it = 0; it < iters; it++) {
            size_t size = (size_t)(it * 7) % 256;
            MPI_CHECK(MPI_Start(&req));
            MPI_CHECK(MPI_Wait(&req, &st));
            check_recv(buf, &st, size, seed_of(7, size, it, 0), 300 + it % 5, "Recv_init(ANY_SOURCE, ANY_TAG)",
                       it);
        }
        MPI_CHECK(MPI_Request_free(&req));
    }
}

/* 8: inactive requests */
static void inactive(void)
{
    int x = 0, y = 0;
    MPI_Request req;
    MPI_Status st;
    int flag;
    if (mt_rank % 2 == 1) {
        /* never started */
        MPI_CHECK(MPI_Recv_init(&x, 1, MPI_INT, peer, 400, MPI_COMM_WORLD, &req));
        st.MPI_SOURCE = st.MPI_TAG = 12345;
        MPI_CHECK(MPI_Wait(&req, &st));
        check_empty(&st, "MPI_Wait on a never-started Recv_init");
        CHECK(req != MPI_REQUEST_NULL, "MPI_Wait on an inactive persistent request freed it");
        flag = 0;
        MPI_CHECK(MPI_Test(&req, &flag, &st));
        CHECK(flag, "MPI_Test on an inactive persistent request returned flag 0");
        check_empty(&st, "MPI_Test on a never-started Recv_init");
        /* used once, then inactive again */
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        CHECK(x == 4711 && st.MPI_TAG == 400, "Recv_init: got %d tag %d", x, st.MPI_TAG);
        MPI_CHECK(MPI_Wait(&req, &st));
        check_empty(&st, "second MPI_Wait on a completed persistent receive");
        MPI_CHECK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free of a used, inactive Recv_init did not set MPI_REQUEST_NULL");
        /* a never-started wildcard receive, freed: must not take the next message */
        MPI_CHECK(MPI_Recv_init(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free of a never-started Recv_init did not set MPI_REQUEST_NULL");
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, 401, ctl)); /* now send the next one */
        x = 0;
        MPI_CHECK(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(x == 4712 && st.MPI_TAG == 402 && y == 0,
              "after freeing an unstarted Recv_init(ANY, ANY): got %d tag %d (want 4712, 402), freed buffer %d", x,
              st.MPI_TAG, y);
        checked += 2;
    } else {
        MPI_CHECK(MPI_Send_init(&x, 1, MPI_INT, peer, 400, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Wait(&req, &st)); /* inactive: returns at once */
        x = 4711;
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        MPI_CHECK(MPI_Request_free(&req));
        CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free of an inactive Send_init did not set MPI_REQUEST_NULL");
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 401, ctl, MPI_STATUS_IGNORE));
        x = 4712;
        MPI_CHECK(MPI_Send(&x, 1, MPI_INT, peer, 402, MPI_COMM_WORLD));
    }
}

static void freed_active(int iters)
{
    enum { SMALL = 64, LARGE = 64 << 10, EVERY = 2 };
    const int larges = (iters + EVERY - 1) / EVERY;
    unsigned char *large = mt_malloc((size_t)larges * LARGE), *small = mt_malloc((size_t)iters * SMALL);
    int provided, token = 0;
    mt_fill(large, (size_t)larges * LARGE, 9);
    mt_fill(small, (size_t)iters * SMALL, 10);
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    const long long before = mt_pml_requests();
    for (int it = 0; it < iters; it++) {
        const int big = it % EVERY == 0;
        void *buf = big ? large + (size_t)(it / EVERY) * LARGE : small + (size_t)it * SMALL;
        const int n = big ? LARGE : SMALL;
        MPI_Request req;
        if (mt_rank % 2 == 0) {
            MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 902, ctl, MPI_STATUS_IGNORE)); /* its receive is out */
            MPI_CHECK(MPI_Send_init(buf, n, MPI_BYTE, peer, 900, MPI_COMM_WORLD, &req));
            MPI_CHECK(MPI_Start(&req));
            MPI_CHECK(MPI_Request_free(&req));
            MPI_CHECK(MPI_Send(&it, 1, MPI_INT, peer, 900, MPI_COMM_WORLD));
        } else {
            MPI_CHECK(MPI_Recv_init(buf, n, MPI_BYTE, peer, 900, MPI_COMM_WORLD, &req));
            MPI_CHECK(MPI_Start(&req));
            MPI_CHECK(MPI_Request_free(&req));
            CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free of an active Recv_init did not set MPI_REQUEST_NULL");
            MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, 902, ctl));
            MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, peer, 900, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(token == it, "after freeing an active Recv_init: the next message said %d, want %d", token, it);
            checked++;
        }
    }
    int theirs = -1; /* both sides done before the count */
    MPI_CHECK(MPI_Sendrecv(&token, 1, MPI_INT, peer, 901, &theirs, 1, MPI_INT, peer, 901, ctl, MPI_STATUS_IGNORE));
    const long long after = mt_pml_requests();
    MPI_CHECK(MPI_T_finalize());
    CHECK(after - before <= 128, "requests grew from %lld to %lld over %d requests freed while active (lost?)", before,
          after, iters);
    free(large);
    free(small);
}

/* 10: many receives in one Startall */
static void many_in_startall(int rounds)
{
    enum { N = 80 };
    size_t size[N], off[N], total = 0;
    for (int j = 0; j < N; j++) {
        size[j] = j < 40 ? 64 : j < 60 ? 8 << 10 : 40 << 10;
        off[j] = total;
        total += size[j];
    }
    unsigned char *buf = mt_malloc(total);
    MPI_Request req[N];
    int order[N];
    for (int j = 0; j < N; j++) {
        order[j] = j;
    }
    if (mt_rank % 2 == 1) {
        for (int j = 0; j < N; j++) {
            MPI_CHECK(MPI_Recv_init(buf + off[j], (int)size[j], MPI_BYTE, j % 3 == 0 ? MPI_ANY_SOURCE : peer,
                                    1000 + j, MPI_COMM_WORLD, &req[j]));
        }
    }
    for (int r = 0; r < rounds; r++) {
        mt_rng rng;
        mt_rng_init(&rng, mt_seed(10, (uint64_t)r, 0, 0));
        for (int j = N - 1; j > 0; j--) { /* the sending order, shuffled */
            int k = (int)mt_rng_below(&rng, (uint32_t)j + 1), t = order[j];
            order[j] = order[k];
            order[k] = t;
        }
        if (mt_rank % 2 == 0) {
            for (int i = 0; i < N; i++) {
                const int j = order[i];
                mt_fill(buf + off[j], size[j], seed_of(10, size[j], r, j));
                MPI_CHECK(MPI_Isend(buf + off[j], (int)size[j], MPI_BYTE, peer, 1000 + j, MPI_COMM_WORLD, &req[i]));
                if (i == N / 2 - 1) { /* half out: now the receiver may Startall */
                    MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, 1100, ctl));
                }
            }
            MPI_CHECK(MPI_Waitall(N, req, MPI_STATUSES_IGNORE));
        } else {
            MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 1100, ctl, MPI_STATUS_IGNORE));
            MPI_Status st[N];
            MPI_CHECK(MPI_Startall(N, req));
            MPI_CHECK(MPI_Waitall(N, req, st));
            for (int j = 0; j < N; j++) {
                check_recv(buf + off[j], &st[j], size[j], seed_of(10, size[j], r, j), 1000 + j,
                           "Startall of 80 receives", r);
            }
        }
        MPI_CHECK(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 1101, NULL, 0, MPI_BYTE, peer, 1101, ctl,
                               MPI_STATUS_IGNORE)); /* the sender's buffers are free again */
    }
    if (mt_rank % 2 == 1) {
        for (int j = 0; j < N; j++) {
            MPI_CHECK(MPI_Request_free(&req[j]));
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "persistent", 2);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    peer = mt_rank ^ 1;
    if (peer < mt_size) {
        one_way(1, 64, 400);
        one_way(1, 256 << 10, 60);
        exchange(1024, 200);
        exchange(200 << 10, 30);
        one_way(3, 16, 200);
        one_way(3, 128 << 10, 30);
        one_way(4, 1024, 200);
        one_way(4, 64 << 10, 40);
        one_way(5, 32, 200);
        one_way(5, 100 << 10, 30);
        mixed(100);
        wildcard(200);
        inactive();
        freed_active(200);
        many_in_startall(30);
    }
    MPI_CHECK(MPI_Comm_free(&ctl));
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("%ld receives verified: Send_init, Startall exchange, Ssend_init, Bsend_init, Rsend_init, mixed "
                     "Startall, wildcard Recv_init; Wait/Test/Request_free on inactive requests; requests freed while active "
                     "come back; 80 receives in one Startall",
                     total);
}

/* modes: send modes other than synchronous, 2 ranks.
 *
 *  1. Buffered: MPI_Buffer_attach with room for 8 messages (0 B .. 256 KiB);
 *     rank 0 issues all 8 MPI_Bsends while rank 1 has posted nothing (it waits
 *     for a go-message on another communicator, sent after the Bsends), so
 *     every Bsend must complete locally; the user buffer is overwritten right
 *     after each Bsend. Rank 1 then receives them (in reverse tag order) and
 *     checks the original data. MPI_Buffer_detach must return the attached
 *     buffer and size. Three rounds: Bsend, Ibsend + immediate Wait, and Bsend
 *     again with a new, differently sized buffer.
 *  1b. Buffered space reused: room for one message of 1 MiB, 64 KiB or 16 KiB;
 *     rank 1 receives it and then says so through a file, which rank 0 polls
 *     between MPI_Iprobes (progress for a sender that needs it) and 1 ms
 *     sleeps; rank 0's next MPI_Bsend must find the space free (the message
 *     was delivered, and the sender has heard of it by then or hears in that
 *     call), 3 times each size. Skipped where the two ranks are on different
 *     hosts (the file would not be shared). Stock ob1 may fail it: its buffer
 *     allocator progresses once after a failure but does not try again.
 *  2. Ready: rank 1 posts MPI_Irecvs (one ANY_SOURCE) for 0 B .. 1 MiB, then
 *     MPI_Barrier; rank 0 MPI_Rsends (then MPI_Irsends) after the barrier.
 *  3. Standard: MPI_Send with the buffer overwritten as soon as Send returns
 *     (the receiver posts 50 ms late), MPI_Isend of the same sizes.
 *  4. MPI_Sendrecv and MPI_Sendrecv_replace of 0 B and 1 MiB.
 *  5. Sends to oneself (MPI_Isend + MPI_Recv + MPI_Wait), 8 B and 1 MiB.
 *  6. MPI_PROC_NULL: Send/Recv/Isend/Irecv return at once; receive status is
 *     source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, buffer untouched.
 * MPI calls: Buffer_attach, Buffer_detach, Bsend, Ibsend, Rsend, Irsend, Send,
 * Isend, Irecv, Recv, Wait, Waitall, Barrier, Sendrecv, Sendrecv_replace.
 */
#include "mpitest.h"

#define NB 8
static const int bsizes[NB] = {0, 1, 16, 100, 4000, 20000, 70000, 256 << 10};
#define NR 6
static const int rsizes[NR] = {0, 8, 4000, 70000, 300000, 1 << 20};

static MPI_Comm ctl;
static long checked = 0;
static int peer;

static void check_data(const unsigned char *buf, const MPI_Status *st, int src, int tag, int size, uint64_t seed,
                       const char *what)
{
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag, "%s (%d bytes): source %d tag %d, expected %d %d", what, size,
          st->MPI_SOURCE, st->MPI_TAG, src, tag);
    CHECK(mt_count_bytes(st) == size, "%s (%d bytes): count %d", what, size, mt_count_bytes(st));
    long bad = mt_check(buf, (size_t)size, seed);
    CHECK(bad < 0, "%s (%d bytes): byte %ld wrong", what, size, bad);
    checked++;
}

static void buffered(int round)
{
    unsigned char *buf = mt_malloc(256 << 10);
    MPI_Status st;
    if (mt_rank == 0) {
        int asize = 0;
        for (int i = 0; i < NB; i++)
            asize += bsizes[i] + MPI_BSEND_OVERHEAD;
        asize += round == 2 ? 100000 : 64; /* round 2: a different buffer */
        unsigned char *abuf = mt_malloc((size_t)asize);
        MPI_CHECK(MPI_Buffer_attach(abuf, asize));
        for (int i = 0; i < NB; i++) {
            mt_fill(buf, (size_t)bsizes[i], mt_seed(31, (uint64_t)round, (uint64_t)i, 0));
            if (round == 1) {
                MPI_Request req;
                MPI_CHECK(MPI_Ibsend(buf, bsizes[i], MPI_BYTE, peer, 500 + i, MPI_COMM_WORLD, &req));
                MPI_CHECK(MPI_Wait(&req, &st)); /* buffered: completes locally */
            } else {
                MPI_CHECK(MPI_Bsend(buf, bsizes[i], MPI_BYTE, peer, 500 + i, MPI_COMM_WORLD));
            }
            memset(buf, 0xEE, (size_t)bsizes[i]);
        }
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, round, ctl)); /* go */
        void *p;
        int n;
        MPI_CHECK(MPI_Buffer_detach(&p, &n));
        CHECK(p == abuf && n == asize, "round %d: Buffer_detach returned %p/%d, attached %p/%d", round, p, n,
              (void *)abuf, asize);
        free(abuf);
    } else {
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, round, ctl, MPI_STATUS_IGNORE));
        for (int i = NB - 1; i >= 0; i--) {
            memset(buf, 0, (size_t)bsizes[i]);
            MPI_CHECK(MPI_Recv(buf, 256 << 10, MPI_BYTE, peer, 500 + i, MPI_COMM_WORLD, &st));
            check_data(buf, &st, peer, 500 + i, bsizes[i], mt_seed(31, (uint64_t)round, (uint64_t)i, 0),
                       round == 1 ? "Ibsend" : "Bsend");
        }
    }
    free(buf);
}

/* Waits for the file rank 1 makes once it has a message, progressing MPI in
 * between (a probe that finds nothing), so that the file is mostly found after
 * a sleep: the delivery is then news to the next MPI call. */
static void wait_for_file(const char *path)
{
    for (int ms = 0; access(path, F_OK) != 0; ms++) {
        int flag;
        CHECK(ms < 60000, "no %s after 60 s", path);
        MPI_CHECK(MPI_Iprobe(peer, 1, ctl, &flag, MPI_STATUS_IGNORE));
        usleep(1000);
    }
    unlink(path);
}

static void reused(void)
{
    static const int sizes[3] = {1 << 20, 64 << 10, 16 << 10};
    char host[MPI_MAX_PROCESSOR_NAME] = {0}, other[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_CHECK(MPI_Get_processor_name(host, &len));
    MPI_CHECK(MPI_Sendrecv(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, peer, 1, other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                           peer, 1, ctl, MPI_STATUS_IGNORE));
    if (strcmp(host, other) != 0) {
        if (mt_rank == 0)
            printf("modes: buffered space reused: skipped (ranks on different hosts)\n");
        return;
    }
    long job = (long)getpid();
    MPI_CHECK(MPI_Bcast(&job, 1, MPI_LONG, 0, ctl));
    unsigned char *buf = mt_malloc(1 << 20);
    for (int s = 0; s < 3; s++) {
        int asize = sizes[s] + MPI_BSEND_OVERHEAD;
        unsigned char *abuf = mt_malloc((size_t)asize);
        if (mt_rank == 0)
            MPI_CHECK(MPI_Buffer_attach(abuf, asize));
        for (int i = 0; i < 3; i++) {
            char path[96];
            snprintf(path, sizeof path, "/tmp/modes-%ld-%d-%d", job, s, i);
            uint64_t seed = mt_seed(37, (uint64_t)s, (uint64_t)i, 0);
            if (mt_rank == 0) {
                mt_fill(buf, (size_t)sizes[s], seed);
                MPI_CHECK(MPI_Bsend(buf, sizes[s], MPI_BYTE, peer, 550 + i, MPI_COMM_WORLD));
                wait_for_file(path);
            } else {
                MPI_Status st;
                MPI_CHECK(MPI_Recv(buf, sizes[s], MPI_BYTE, peer, 550 + i, MPI_COMM_WORLD, &st));
                check_data(buf, &st, peer, 550 + i, sizes[s], seed, "Bsend into reused space");
                FILE *f = fopen(path, "w");
                CHECK(f != NULL, "cannot create %s", path);
                fclose(f);
            }
        }
        if (mt_rank == 0) {
            void *p;
            int n;
            MPI_CHECK(MPI_Buffer_detach(&p, &n));
        }
        free(abuf);
    }
    free(buf);
}

static void ready(int nonblocking)
{
    unsigned char *bufs[NR];
    MPI_Request req[NR];
    MPI_Status st[NR];
    for (int i = 0; i < NR; i++)
        bufs[i] = mt_malloc((size_t)rsizes[i]);
    if (mt_rank == 1) {
        for (int i = 0; i < NR; i++)
            MPI_CHECK(MPI_Irecv(bufs[i], rsizes[i], MPI_BYTE, i == 2 ? MPI_ANY_SOURCE : peer, 600 + i, MPI_COMM_WORLD,
                                &req[i]));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Waitall(NR, req, st));
        for (int i = 0; i < NR; i++)
            check_data(bufs[i], &st[i], peer, 600 + i, rsizes[i], mt_seed(32, (uint64_t)nonblocking, (uint64_t)i, 0),
                       nonblocking ? "Irsend" : "Rsend");
    } else {
        for (int i = 0; i < NR; i++)
            mt_fill(bufs[i], (size_t)rsizes[i], mt_seed(32, (uint64_t)nonblocking, (uint64_t)i, 0));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int i = 0; i < NR; i++) {
            if (nonblocking)
                MPI_CHECK(MPI_Irsend(bufs[i], rsizes[i], MPI_BYTE, peer, 600 + i, MPI_COMM_WORLD, &req[i]));
            else
                MPI_CHECK(MPI_Rsend(bufs[i], rsizes[i], MPI_BYTE, peer, 600 + i, MPI_COMM_WORLD));
        }
        if (nonblocking)
            MPI_CHECK(MPI_Waitall(NR, req, st));
    }
    for (int i = 0; i < NR; i++)
        free(bufs[i]);
}

static void standard(void)
{
    unsigned char *buf = mt_malloc(1 << 20);
    MPI_Status st;
    for (int nb = 0; nb < 2; nb++)
        for (int i = 0; i < NR; i++) {
            uint64_t seed = mt_seed(33, (uint64_t)nb, (uint64_t)i, 0);
            if (mt_rank == 0) {
                mt_fill(buf, (size_t)rsizes[i], seed);
                if (nb) {
                    MPI_Request req;
                    MPI_CHECK(MPI_Isend(buf, rsizes[i], MPI_BYTE, peer, 700 + i, MPI_COMM_WORLD, &req));
                    MPI_CHECK(MPI_Wait(&req, &st));
                } else {
                    MPI_CHECK(MPI_Send(buf, rsizes[i], MPI_BYTE, peer, 700 + i, MPI_COMM_WORLD));
                }
                memset(buf, 0xEE, (size_t)rsizes[i]); /* the send is complete: buffer is ours */
            } else {
                if (i == 0 || i == NR - 1)
                    mt_sleep_ms(50);
                memset(buf, 0, (size_t)rsizes[i]);
                MPI_CHECK(MPI_Recv(buf, 1 << 20, MPI_BYTE, peer, 700 + i, MPI_COMM_WORLD, &st));
                check_data(buf, &st, peer, 700 + i, rsizes[i], seed, nb ? "Isend" : "Send");
            }
        }
    free(buf);
}

static void sendrecv(void)
{
    int sizes[2] = {0, 1 << 20};
    unsigned char *a = mt_malloc(1 << 20), *b = mt_malloc(1 << 20);
    MPI_Status st;
    for (int i = 0; i < 2; i++) {
        mt_fill(a, (size_t)sizes[i], mt_seed(34, (uint64_t)i, (uint64_t)mt_rank, 0));
        MPI_CHECK(MPI_Sendrecv(a, sizes[i], MPI_BYTE, peer, 800, b, sizes[i], MPI_BYTE, peer, 800, MPI_COMM_WORLD,
                               &st));
        check_data(b, &st, peer, 800, sizes[i], mt_seed(34, (uint64_t)i, (uint64_t)peer, 0), "Sendrecv");
        mt_fill(a, (size_t)sizes[i], mt_seed(35, (uint64_t)i, (uint64_t)mt_rank, 0));
        MPI_CHECK(MPI_Sendrecv_replace(a, sizes[i], MPI_BYTE, peer, 801, peer, 801, MPI_COMM_WORLD, &st));
        check_data(a, &st, peer, 801, sizes[i], mt_seed(35, (uint64_t)i, (uint64_t)peer, 0), "Sendrecv_replace");
    }
    free(a);
    free(b);
}

static void self(void)
{
    int sizes[2] = {8, 1 << 20};
    unsigned char *a = mt_malloc(1 << 20), *b = mt_malloc(1 << 20);
    MPI_Status st;
    for (int i = 0; i < 2; i++) {
        MPI_Request req;
        uint64_t seed = mt_seed(36, (uint64_t)i, (uint64_t)mt_rank, 0);
        mt_fill(a, (size_t)sizes[i], seed);
        MPI_CHECK(MPI_Isend(a, sizes[i], MPI_BYTE, mt_rank, 900, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Recv(b, sizes[i], MPI_BYTE, mt_rank, 900, MPI_COMM_WORLD, &st));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(st.MPI_SOURCE == mt_rank, "send to self: source %d", st.MPI_SOURCE);
        CHECK(mt_count_bytes(&st) == sizes[i] && mt_check(b, (size_t)sizes[i], seed) < 0,
              "send to self of %d bytes: wrong count or data", sizes[i]);
        checked++;
    }
    free(a);
    free(b);
}

static void proc_null(void)
{
    int x = 5, y = 7;
    MPI_Status st;
    MPI_Request req[2];
    MPI_CHECK(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count_bytes(&st) == 0 && y == 7,
          "Recv from MPI_PROC_NULL: source %d tag %d count %d value %d", st.MPI_SOURCE, st.MPI_TAG, mt_count_bytes(&st),
          y);
    MPI_CHECK(MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req[0]));
    MPI_CHECK(MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req[1]));
    MPI_Status sts[2];
    MPI_CHECK(MPI_Waitall(2, req, sts));
    CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG && mt_count_bytes(&sts[1]) == 0 &&
              y == 7,
          "Irecv from MPI_PROC_NULL: source %d tag %d count %d", sts[1].MPI_SOURCE, sts[1].MPI_TAG,
          mt_count_bytes(&sts[1]));
    checked += 2;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "modes", 2);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    peer = mt_rank ^ 1;
    int active = mt_rank < 2;
    if (active) {
        for (int round = 0; round < 3; round++)
            buffered(round);
        reused();
    }
    for (int nb = 0; nb < 2; nb++) {
        if (active)
            ready(nb);
        else
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    if (active) {
        standard();
        sendrecv();
    }
    self();
    proc_null();
    MPI_CHECK(MPI_Comm_free(&ctl));
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("%ld receives verified: 3 rounds of 8 outstanding Bsend/Ibsend with attach/detach, buffered space reused, Rsend/Irsend "
                     "after barrier, Send/Isend buffer reuse, Sendrecv(_replace), self, MPI_PROC_NULL",
                     total);
}

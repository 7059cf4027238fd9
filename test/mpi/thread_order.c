/* thread_order: MPI's matching order under MPI_THREAD_MULTIPLE, with threads
 * posting receives on one communicator while other threads' messages arrive
 * (the case pml_ubermatch_threading = tailq serves: docs/tail-queues.md).
 * 2 ranks (more: pairs 0-1, 2-3, ...), each running NSTREAM sender threads
 * and NSTREAM receiver threads, all on one duplicate of MPI_COMM_WORLD.
 *
 * Sender thread j sends NMSG messages to the peer: message k has tag
 * 3j + k % 3 and carries (j, k) and a pattern; mostly 16-79 B, every 101st
 * 20000 B, every 199th 300000 B (rendezvous); every 5th by MPI_Isend + Wait.
 * Receiver thread j takes the stream j of its peer in windows of 1-16
 * MPI_Irecv + MPI_Waitall (sometimes after a pause, so that the messages are
 * unexpected, sometimes before they are sent), or by MPI_Mprobe + MPI_Mrecv;
 * receive k asks for (peer, 3j + k % 3) when k is even and (MPI_ANY_SOURCE,
 * 3j + k % 3) when odd. Before the stream, it posts DEPTH receives of a tag
 * never sent (arrivals search past them), cancelled at the end.
 *
 * MPI's rules then fix what each receive gets: receive k must get message k
 * (receives posted in order take a source's messages of their pattern in
 * order, and the wildcard receive k posted before the exact receive k + 3 of
 * the same tag must take message k first). Checked: MPI_SOURCE, MPI_TAG,
 * count, (j, k) and content of every message, and every cancel. A matching
 * engine that let a receive overtake an earlier one, or a message another,
 * fails the check (or hangs: the watchdog).
 */
#include "mpitest.h"

#include <pthread.h>

#define NSTREAM 3
#define NMSG 600
#define MAXWIN 16
#define DEPTH 8
#define NEVER_TAG 1000
#define BIG 20000
#define HUGEMSG 300000

static MPI_Comm comm;
static int peer;

static int msg_size(int j, int k)
{
    if (k % 199 == 198)
        return HUGEMSG;
    if (k % 101 == 100)
        return BIG;
    return 16 + (k * 7 + j) % 64;
}

static int msg_tag(int j, int k)
{
    return 3 * j + k % 3;
}

static uint64_t msg_seed(int from, int j, int k)
{
    return mt_seed(90, (uint64_t)from, (uint64_t)j, (uint64_t)k);
}

static void *sender(void *p)
{
    int j = *(int *)p;
    unsigned char *b = mt_malloc(HUGEMSG);
    for (int k = 0; k < NMSG; k++) {
        int n = msg_size(j, k);
        int32_t h[2] = {j, k};
        mt_fill(b, (size_t)n, msg_seed(mt_rank, j, k));
        memcpy(b, h, sizeof h);
        if (k % 5 == 4) {
            MPI_Request r;
            MPI_CHECK(MPI_Isend(b, n, MPI_BYTE, peer, msg_tag(j, k), comm, &r));
            MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MPI_CHECK(MPI_Send(b, n, MPI_BYTE, peer, msg_tag(j, k), comm));
        }
    }
    free(b);
    return NULL;
}

static void check_msg(int j, int k, const unsigned char *b, const MPI_Status *st, const char *how)
{
    int32_t h[2];
    int n = mt_count_bytes(st);
    CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == msg_tag(j, k),
          "stream %d receive %d (%s): source %d tag %d, expected %d %d", j, k, how, st->MPI_SOURCE, st->MPI_TAG,
          peer, msg_tag(j, k));
    CHECK(n >= 8, "stream %d receive %d (%s): %d bytes", j, k, how, n);
    memcpy(h, b, sizeof h);
    CHECK(h[0] == j && h[1] == k,
          "stream %d receive %d (%s) got message %d of stream %d: matching order broken (a receive or a message "
          "overtook another)",
          j, k, how, h[1], h[0]);
    CHECK(n == msg_size(j, k), "stream %d message %d (%s): %d bytes, expected %d", j, k, how, n, msg_size(j, k));
    /* the first 8 bytes hold (j, k): check the pattern after them */
    unsigned char *ref = mt_malloc((size_t)n);
    mt_fill(ref, (size_t)n, msg_seed(peer, j, k));
    CHECK(memcmp(b + 8, ref + 8, (size_t)n - 8) == 0, "stream %d message %d (%s): content wrong", j, k, how);
    free(ref);
}

static void *receiver(void *p)
{
    int j = *(int *)p;
    mt_rng rng;
    mt_rng_init(&rng, mt_seed(91, (uint64_t)mt_rank, (uint64_t)j, 0));
    unsigned char *bufs = mt_malloc((size_t)MAXWIN * HUGEMSG);
    MPI_Request never[DEPTH], req[MAXWIN];
    MPI_Status st[MAXWIN];
    int dummy[DEPTH];
    for (int d = 0; d < DEPTH; d++)
        MPI_CHECK(MPI_Irecv(&dummy[d], 1, MPI_INT, d % 2 ? MPI_ANY_SOURCE : peer, NEVER_TAG + j, comm, &never[d]));

    for (int k = 0; k < NMSG;) {
        int src = k % 2 ? MPI_ANY_SOURCE : peer;
        uint32_t pick = mt_rng_below(&rng, 16);
        if (pick < 3)
            mt_sleep_ms(0.05 * pick); /* let messages queue as unexpected */
        if (pick == 15) {
            MPI_Message m;
            MPI_CHECK(MPI_Mprobe(src, msg_tag(j, k), comm, &m, &st[0]));
            MPI_CHECK(MPI_Mrecv(bufs, HUGEMSG, MPI_BYTE, &m, &st[0]));
            check_msg(j, k, bufs, &st[0], "Mprobe/Mrecv");
            k++;
            continue;
        }
        int w = 1 + (int)mt_rng_below(&rng, MAXWIN);
        if (w > NMSG - k)
            w = NMSG - k;
        for (int i = 0; i < w; i++) {
            int kk = k + i;
            MPI_CHECK(MPI_Irecv(bufs + (size_t)i * HUGEMSG, HUGEMSG, MPI_BYTE, kk % 2 ? MPI_ANY_SOURCE : peer,
                                msg_tag(j, kk), comm, &req[i]));
        }
        MPI_CHECK(MPI_Waitall(w, req, st));
        for (int i = 0; i < w; i++)
            check_msg(j, k + i, bufs + (size_t)i * HUGEMSG, &st[i], (k + i) % 2 ? "Irecv, wildcard source" : "Irecv");
        k += w;
    }

    for (int d = 0; d < DEPTH; d++) {
        MPI_Status cs;
        int cancelled = 0;
        MPI_CHECK(MPI_Cancel(&never[d]));
        MPI_CHECK(MPI_Wait(&never[d], &cs));
        MPI_CHECK(MPI_Test_cancelled(&cs, &cancelled));
        CHECK(cancelled, "stream %d: receive %d of a tag never sent was not cancelled", j, d);
    }
    free(bufs);
    return NULL;
}

int main(int argc, char **argv)
{
    mt_init_thread(&argc, &argv, "thread_order", 2, MPI_THREAD_MULTIPLE);
    peer = mt_rank ^ 1;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    long received = 0;
    if (peer < mt_size) {
        pthread_t th[2 * NSTREAM];
        int ids[NSTREAM];
        for (int j = 0; j < NSTREAM; j++) {
            ids[j] = j;
            CHECK(pthread_create(&th[j], NULL, receiver, &ids[j]) == 0, "pthread_create failed");
            CHECK(pthread_create(&th[NSTREAM + j], NULL, sender, &ids[j]) == 0, "pthread_create failed");
        }
        for (int t = 0; t < 2 * NSTREAM; t++)
            pthread_join(th[t], NULL);
        received = (long)NSTREAM * NMSG;
    }
    MPI_CHECK(MPI_Comm_free(&comm));
    long total = 0;
    MPI_CHECK(MPI_Reduce(&received, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("MPI_THREAD_MULTIPLE, %d sender and %d receiver threads per rank on one communicator: %ld "
                     "messages each taken by the receive MPI's order gives it (wildcard and exact sources, "
                     "windows, unexpected, Mprobe, %d pending receives ahead, cancelled at the end)",
                     NSTREAM, NSTREAM, total, DEPTH);
}

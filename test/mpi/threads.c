/* threads: MPI_THREAD_MULTIPLE, 2 ranks x 4 threads (fails at once if the
 * library does not provide MPI_THREAD_MULTIPLE). With more ranks, ranks pair
 * up 0-1, 2-3, ... ("rank 0" below: the even rank of a pair).
 *
 * Thread k of rank 0 works with thread k of rank 1, all threads at once:
 *  1. ping-pong on a shared duplicate of MPI_COMM_WORLD with tag k, 200
 *     iterations, sizes cycling 0 B, 8 B, 1000 B, 5000 B, 70000 B; blocking
 *     Send/Recv, every third iteration MPI_Mprobe(peer, k) + MPI_Mrecv, every
 *     fifth Isend/Irecv both ways; MPI_SOURCE, MPI_TAG, count and content
 *     checked. A message for another thread's tag would fail the check.
 *  2. ANY_TAG traffic on a second duplicate: rank 0's thread k sends 500
 *     messages with tag k carrying (k, seq) and a pattern (mostly small, some
 *     20000 B); rank 1's 4 threads each receive 500 with (0, MPI_ANY_TAG),
 *     alternating MPI_Recv and MPI_Mprobe + MPI_Mrecv (which must deliver the
 *     very message that was probed, whatever the other threads do).
 *     Afterwards rank 1 checks that every (tag, seq) arrived exactly once, with
 *     MPI_TAG equal to the tag in the payload and intact content, and that
 *     within each receiving thread the sequence numbers of each tag only grow
 *     (MPI ordering: one thread's successive receives cannot overtake).
 *  3. Threads that come and go: SHORTLIVED threads one after another, each with
 *     BURST receives and BURST synchronous sends to itself on MPI_COMM_SELF
 *     pending at once (content checked). Under ubermatch (its pvar
 *     pml_ubermatch_requests), the process's requests must not grow with the
 *     threads that have come and gone: a thread's free requests (kept per
 *     thread under MPI_THREAD_MULTIPLE) go back when it exits.
 * MPI calls: Init_thread(MULTIPLE), Comm_dup, Send, Recv, Isend, Irecv, Issend,
 * Waitall, Mprobe, Mrecv, Get_count, from 4 threads concurrently; MPI_T.
 */
#include "mpitest.h"

#include <pthread.h>

#define NTHREADS 4
#define ITERS 200
#define NSTREAM 500
#define BIGSTREAM 20000

static MPI_Comm pp_comm, any_comm;
static int peer;
static const int pp_sizes[5] = {0, 8, 1000, 5000, 70000};

typedef struct {
    int k;
    long pp_checked;
    int got_tag[NSTREAM * NTHREADS]; /* rank 1 phase 2: what this thread received, in order */
    int got_seq[NSTREAM * NTHREADS];
    int ngot;
} targ_t;

static int stream_size(int k, int seq)
{
    return (seq % 50 == 49) ? BIGSTREAM + k : 8 + (seq * 13 + k) % 200;
}

static void pp_check(const unsigned char *b, const MPI_Status *st, int k, int it, size_t n, const char *what)
{
    CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == k,
          "thread %d iteration %d %s: source %d tag %d, expected %d %d (a message for another thread?)", k, it, what,
          st->MPI_SOURCE, st->MPI_TAG, peer, k);
    CHECK(mt_count_bytes(st) == (int)n, "thread %d iteration %d %s: count %d, expected %zu", k, it, what,
          mt_count_bytes(st), n);
    long bad = mt_check(b, n, mt_seed(81, (uint64_t)k, (uint64_t)it, (uint64_t)peer));
    CHECK(bad < 0, "thread %d iteration %d %s: byte %ld wrong", k, it, what, bad);
}

static void *thread_main(void *p)
{
    targ_t *a = p;
    int k = a->k;
    unsigned char *sb = mt_malloc(70000), *rb = mt_malloc(70000);
    MPI_Status st;

    /* 1. ping-pong */
    for (int it = 0; it < ITERS; it++) {
        size_t n = (size_t)pp_sizes[(it + k) % 5];
        mt_fill(sb, n, mt_seed(81, (uint64_t)k, (uint64_t)it, (uint64_t)mt_rank));
        if (it % 5 == 4) {
            MPI_Request req[2];
            MPI_Status sts[2];
            MPI_CHECK(MPI_Irecv(rb, (int)n, MPI_BYTE, peer, k, pp_comm, &req[0]));
            MPI_CHECK(MPI_Isend(sb, (int)n, MPI_BYTE, peer, k, pp_comm, &req[1]));
            MPI_CHECK(MPI_Waitall(2, req, sts));
            pp_check(rb, &sts[0], k, it, n, "Isend/Irecv");
        } else {
            int use_mprobe = it % 3 == 0;
            for (int step = 0; step < 2; step++) {
                int sending = (step == 0) == (mt_rank % 2 == 0);
                if (sending) {
                    MPI_CHECK(MPI_Send(sb, (int)n, MPI_BYTE, peer, k, pp_comm));
                } else if (use_mprobe) {
                    MPI_Message m;
                    MPI_CHECK(MPI_Mprobe(peer, k, pp_comm, &m, &st));
                    CHECK(st.MPI_TAG == k && mt_count_bytes(&st) == (int)n,
                          "thread %d iteration %d: Mprobe(peer, %d) found tag %d count %d", k, it, k, st.MPI_TAG,
                          mt_count_bytes(&st));
                    MPI_CHECK(MPI_Mrecv(rb, (int)n, MPI_BYTE, &m, &st));
                    pp_check(rb, &st, k, it, n, "Mprobe/Mrecv");
                } else {
                    MPI_CHECK(MPI_Recv(rb, (int)n, MPI_BYTE, peer, k, pp_comm, &st));
                    pp_check(rb, &st, k, it, n, "Recv");
                }
            }
        }
        a->pp_checked++;
    }

    /* 2. ANY_TAG streams */
    if (mt_rank % 2 == 0) {
        for (int seq = 0; seq < NSTREAM; seq++) {
            int n = stream_size(k, seq);
            int32_t h[2] = {k, seq};
            mt_fill(sb, (size_t)n, mt_seed(82, (uint64_t)k, (uint64_t)seq, 0));
            memcpy(sb, h, 8);
            MPI_CHECK(MPI_Send(sb, n, MPI_BYTE, peer, k, any_comm));
        }
    } else {
        unsigned char *ref = mt_malloc(BIGSTREAM + NTHREADS);
        for (int i = 0; i < NSTREAM; i++) {
            if (i % 2) {
                /* Mprobe + Mrecv: the message must be the one probed, even
                 * with 3 other threads receiving the same streams */
                MPI_Message m;
                MPI_Status pst;
                MPI_CHECK(MPI_Mprobe(peer, MPI_ANY_TAG, any_comm, &m, &pst));
                MPI_CHECK(MPI_Mrecv(rb, BIGSTREAM + NTHREADS, MPI_BYTE, &m, &st));
                CHECK(st.MPI_TAG == pst.MPI_TAG && mt_count_bytes(&st) == mt_count_bytes(&pst),
                      "ANY_TAG stream, thread %d: MPI_Mprobe saw tag %d / %d bytes but MPI_Mrecv got tag %d / %d bytes "
                      "(another thread took the probed message?)",
                      k, pst.MPI_TAG, mt_count_bytes(&pst), st.MPI_TAG, mt_count_bytes(&st));
            } else {
                MPI_CHECK(MPI_Recv(rb, BIGSTREAM + NTHREADS, MPI_BYTE, peer, MPI_ANY_TAG, any_comm, &st));
            }
            int32_t h[2];
            int n = mt_count_bytes(&st);
            CHECK(n >= 8, "ANY_TAG stream: %d-byte message", n);
            memcpy(h, rb, 8);
            int t = h[0], seq = h[1];
            CHECK(t >= 0 && t < NTHREADS && seq >= 0 && seq < NSTREAM && st.MPI_TAG == t,
                  "ANY_TAG stream: payload (tag %d, seq %d) with MPI_TAG %d", t, seq, st.MPI_TAG);
            CHECK(n == stream_size(t, seq), "ANY_TAG stream tag %d seq %d: %d bytes, expected %d", t, seq, n,
                  stream_size(t, seq));
            mt_fill(ref, (size_t)n, mt_seed(82, (uint64_t)t, (uint64_t)seq, 0));
            CHECK(memcmp(rb + 8, ref + 8, (size_t)n - 8) == 0, "ANY_TAG stream tag %d seq %d: content wrong", t, seq);
            a->got_tag[a->ngot] = t;
            a->got_seq[a->ngot] = seq;
            a->ngot++;
        }
        free(ref);
    }
    free(sb);
    free(rb);
    return NULL;
}

#define SHORTLIVED 24
#define BURST 48

static void *short_lived(void *p)
{
    const int k = *(const int *)p;
    int rb[BURST], sb[BURST];
    MPI_Request r[2 * BURST];
    for (int i = 0; i < BURST; i++)
        MPI_CHECK(MPI_Irecv(&rb[i], 1, MPI_INT, 0, i, MPI_COMM_SELF, &r[i]));
    for (int i = 0; i < BURST; i++) {
        sb[i] = k * 1000 + i;
        MPI_CHECK(MPI_Issend(&sb[i], 1, MPI_INT, 0, i, MPI_COMM_SELF, &r[BURST + i]));
    }
    MPI_CHECK(MPI_Waitall(2 * BURST, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < BURST; i++)
        CHECK(rb[i] == k * 1000 + i, "short-lived thread %d: receive %d got %d", k, i, rb[i]);
    return NULL;
}

/* Phase 3; returns the requests the process gained over all SHORTLIVED threads (-1: no pvar). */
static long long threads_come_and_go(void)
{
    int provided;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    const long long before = mt_pml_requests();
    for (int k = 0; k < SHORTLIVED; k++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, short_lived, &k) == 0, "pthread_create failed");
        pthread_join(t, NULL);
    }
    const long long after = mt_pml_requests();
    MPI_CHECK(MPI_T_finalize());
    if (before < 0)
        return -1;
    /* One thread's 2 x BURST at once, in the free list's steps of 64, and the
     * main thread's cache: without the exit's drain each thread keeps up to 64. */
    CHECK(after - before <= 4 * 64,
          "requests grew from %lld to %lld over %d threads that came and went (kept by exited threads?)",
          before, after, SHORTLIVED);
    return after - before;
}

int main(int argc, char **argv)
{
    mt_init_thread(&argc, &argv, "threads", 2, MPI_THREAD_MULTIPLE);
    peer = mt_rank ^ 1;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &pp_comm));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &any_comm));
    long pp = 0, streamed = 0;
    if (peer < mt_size) {
        targ_t *args = calloc(NTHREADS, sizeof(targ_t));
        pthread_t th[NTHREADS];
        CHECK(args, "out of memory");
        for (int k = 0; k < NTHREADS; k++) {
            args[k].k = k;
            CHECK(pthread_create(&th[k], NULL, thread_main, &args[k]) == 0, "pthread_create failed");
        }
        for (int k = 0; k < NTHREADS; k++)
            pthread_join(th[k], NULL);
        for (int k = 0; k < NTHREADS; k++)
            pp += args[k].pp_checked;
        if (mt_rank % 2 == 1) {
            static char seen[NTHREADS][NSTREAM];
            for (int k = 0; k < NTHREADS; k++) {
                int last[NTHREADS] = {-1, -1, -1, -1};
                for (int i = 0; i < args[k].ngot; i++) {
                    int t = args[k].got_tag[i], s = args[k].got_seq[i];
                    CHECK(!seen[t][s], "ANY_TAG stream: tag %d seq %d received twice", t, s);
                    seen[t][s] = 1;
                    CHECK(s > last[t],
                          "ANY_TAG stream: receiving thread %d got tag %d seq %d after seq %d (one thread's receives "
                          "overtook each other)",
                          k, t, s, last[t]);
                    last[t] = s;
                    streamed++;
                }
            }
            for (int t = 0; t < NTHREADS; t++)
                for (int s = 0; s < NSTREAM; s++)
                    CHECK(seen[t][s], "ANY_TAG stream: tag %d seq %d never received", t, s);
        }
        free(args);
    }
    MPI_CHECK(MPI_Comm_free(&pp_comm));
    MPI_CHECK(MPI_Comm_free(&any_comm));
    const long long grew = threads_come_and_go();
    long tot_pp = 0, tot_st = 0;
    MPI_CHECK(MPI_Reduce(&pp, &tot_pp, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&streamed, &tot_st, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("MPI_THREAD_MULTIPLE, %d threads per rank: %ld ping-pong iterations (Recv/Mprobe/Irecv, distinct "
                     "tags) and %ld ANY_TAG stream messages each received exactly once in per-thread order; "
                     "%d short-lived threads with %d requests each at once (requests gained: %lld; -1: no pvar, "
                     "not measured)",
                     NTHREADS, tot_pp, tot_st, SHORTLIVED, 2 * BURST, grew);
}

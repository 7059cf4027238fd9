/* unexpected: 10^5 small messages (8-32 B) sit in the receiver's unexpected
 * queue before it posts a single data receive, then are drained.
 *
 * Ranks 1..P-1 (>= 2 ranks) share the 10^5 messages; sender s's message k has
 * tag k % 5 (its last message: tag 5) and carries (s, k) plus a pattern.
 * Sending: MPI_Isend in batches of 500; after each batch the sender polls
 * MPI_Testall on it for up to 1 s (with an eager protocol the batch completes
 * locally; stock ob1 gets very slow with ~10^5 sends stuck in its pending
 * queue, hence the batches). If a batch does not complete, the sender stops
 * waiting and just keeps its requests, so nothing depends on buffering. Then
 * each sender MPI_Ssends a marker (tag 99) and only then MPI_Waitalls its data.
 * Rank 0 first receives the markers with (s, 99) receives; since a sender's
 * messages are matched in order, every data message of s was matched as
 * unexpected before the marker (that receive searches past all of them).
 * Rank 0 then drains, checking each message is exactly the one MPI's ordering
 * rules require (the earliest remaining message of the sender in its status
 * that matches the receive's tag) and its content:
 *   1. each sender's last message with an (s, 5) receive (a full-depth search);
 *   2. the first 400 tag-4 messages of sender 1 with (1, 4) receives;
 *   3. 400 messages with (ANY_SOURCE, 2) receives;
 *   4. the rest in order, rotating (ANY_SOURCE, ANY_TAG), (s, ANY_TAG),
 *      (s, tag) blocking receives (the tag often a later one than the next
 *      message's, so the search skips some), and batches of 64 pre-posted
 *      (s, ANY_TAG) MPI_Irecvs.
 * (Receiving all 20000 tag-4 messages first would be quadratic on a list
 * queue: 30 s on ob1.) Finally MPI_Iprobe(ANY_SOURCE, ANY_TAG) must find
 * nothing left.
 * MPI calls: Isend, Testall, Ssend, Waitall, Recv, Irecv, Iprobe.
 */
#include "mpitest.h"

#define TOTAL 100000
#define NT 5 /* tags 0..4 cycle; tag 5 marks the last message */
#define NTAGS 6
#define DEEP 400
#define SBATCH 500
#define MSGMAX 32
#define TAG_MARK 99
#define BATCH 64

static int P, nsend[64];
static int cnt[64][NTAGS]; /* received so far per sender and tag */
static long received = 0;

static int msg_size(int k)
{
    return 8 + k % 25;
}

static int tag_of(int s, int k)
{
    return k == nsend[s] - 1 ? NT : k % NT;
}

static uint64_t seed_of(int s, int k)
{
    return mt_seed(5, (uint64_t)s, (uint64_t)k, 0);
}

/* Next remaining seq of sender s with tag t, or -1. */
static int head(int s, int t)
{
    if (t == NT)
        return cnt[s][NT] == 0 ? nsend[s] - 1 : -1;
    int k = t + NT * cnt[s][t];
    return k < nsend[s] - 1 ? k : -1;
}

/* The message a receive (s, tag) must get from sender s. */
static int expected(int s, int tag)
{
    int best = -1;
    for (int t = 0; t < NTAGS; t++) {
        if (tag != MPI_ANY_TAG && tag != t)
            continue;
        int k = head(s, t);
        if (k >= 0 && (best < 0 || k < best))
            best = k;
    }
    return best;
}

static void verify(const unsigned char *buf, const MPI_Status *st, int rsrc, int rtag, const char *what)
{
    int s = st->MPI_SOURCE;
    CHECK(s >= 1 && s < P, "%s: MPI_SOURCE %d", what, s);
    CHECK(rsrc == MPI_ANY_SOURCE || rsrc == s, "%s: receive for source %d got source %d", what, rsrc, s);
    int32_t h[2];
    int n = mt_count_bytes(st);
    CHECK(n >= 8, "%s: message of %d bytes", what, n);
    memcpy(h, buf, 8);
    int k = h[1];
    CHECK(h[0] == s && k >= 0 && k < nsend[s], "%s: bad header (sender %d seq %d) from %d", what, h[0], k, s);
    CHECK(st->MPI_TAG == tag_of(s, k), "%s: sender %d seq %d: MPI_TAG %d, expected %d", what, s, k, st->MPI_TAG,
          tag_of(s, k));
    CHECK(rtag == MPI_ANY_TAG || rtag == st->MPI_TAG, "%s: receive for tag %d got tag %d", what, rtag, st->MPI_TAG);
    int e = expected(s, rtag);
    CHECK(k == e, "%s: got sender %d seq %d, MPI order requires seq %d", what, s, k, e);
    CHECK(n == msg_size(k), "%s: sender %d seq %d: %d bytes, expected %d", what, s, k, n, msg_size(k));
    long bad = mt_check(buf + 8, (size_t)n - 8, seed_of(s, k));
    CHECK(bad < 0, "%s: sender %d seq %d: payload byte %ld wrong", what, s, k, bad + 8);
    cnt[s][tag_of(s, k)]++;
    received++;
}

static int left_of(int s)
{
    int done = 0;
    for (int t = 0; t < NTAGS; t++)
        done += cnt[s][t];
    return nsend[s] - done;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "unexpected", 2);
    P = mt_size;
    CHECK(P <= 64, "at most 64 ranks");
    for (int s = 1; s < P; s++)
        nsend[s] = TOTAL / (P - 1) + (s <= TOTAL % (P - 1) ? 1 : 0);

    if (mt_rank != 0) {
        int n = nsend[mt_rank];
        unsigned char *buf = mt_malloc((size_t)n * MSGMAX);
        MPI_Request *req = mt_malloc(sizeof(MPI_Request) * (size_t)n);
        int waiting = 1; /* poll each batch until it completes, while that works */
        for (int k = 0; k < n; k++) {
            unsigned char *p = buf + (size_t)k * MSGMAX;
            int32_t h[2] = {mt_rank, k};
            memcpy(p, h, 8);
            mt_fill(p + 8, (size_t)msg_size(k) - 8, seed_of(mt_rank, k));
            MPI_CHECK(MPI_Isend(p, msg_size(k), MPI_BYTE, 0, tag_of(mt_rank, k), MPI_COMM_WORLD, &req[k]));
            if (waiting && ((k + 1) % SBATCH == 0 || k == n - 1)) {
                int first = k - k % SBATCH, done = 0;
                double t = mt_now();
                while (!done && mt_now() - t < 1.0)
                    MPI_CHECK(MPI_Testall(k + 1 - first, req + first, &done, MPI_STATUSES_IGNORE));
                waiting = done;
            }
        }
        MPI_CHECK(MPI_Ssend(&n, 1, MPI_INT, 0, TAG_MARK, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        free(req);
        free(buf);
        return mt_finish("-");
    }

    double t0 = mt_now();
    for (int s = 1; s < P; s++) {
        int n = -1;
        MPI_Status st;
        MPI_CHECK(MPI_Recv(&n, 1, MPI_INT, s, TAG_MARK, MPI_COMM_WORLD, &st));
        CHECK(n == nsend[s] && st.MPI_SOURCE == s && st.MPI_TAG == TAG_MARK,
              "marker from %d: count %d (expected %d), source %d, tag %d", s, n, nsend[s], st.MPI_SOURCE, st.MPI_TAG);
    }
    double t_fill = mt_now() - t0;

    unsigned char *buf = mt_malloc((size_t)BATCH * MSGMAX);
    MPI_Status st;
    char what[96];

    /* 1. each sender's last message: a search through its whole queue */
    for (int s = 1; s < P; s++) {
        snprintf(what, sizeof what, "step 1 receive (%d, %d) for the last message", s, NT);
        MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, s, NT, MPI_COMM_WORLD, &st));
        verify(buf, &st, s, NT, what);
    }
    long step1 = received;

    /* 2. sender 1, tag 4, specific */
    for (int i = 0; i < DEEP && head(1, 4) >= 0; i++) {
        snprintf(what, sizeof what, "step 2 receive (1, 4) #%d", i);
        MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &st));
        verify(buf, &st, 1, 4, what);
    }
    long step2 = received - step1;

    /* 3. tag 2, ANY_SOURCE */
    for (int i = 0; i < DEEP; i++) {
        snprintf(what, sizeof what, "step 4 receive (ANY_SOURCE, 2) #%d", i);
        MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st));
        verify(buf, &st, MPI_ANY_SOURCE, 2, what);
    }
    long n2 = DEEP;

    /* 4. the rest, mixed */
    long step3 = 0;
    int s_rr = 1;
    while (received < TOTAL) {
        int tries = 0;
        while (left_of(s_rr) == 0 && tries++ < P)
            s_rr = s_rr % (P - 1) + 1;
        int kind = (int)(step3 % 4);
        if (kind == 0) {
            snprintf(what, sizeof what, "step 4 receive (ANY_SOURCE, ANY_TAG) #%ld", step3);
            MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            verify(buf, &st, MPI_ANY_SOURCE, MPI_ANY_TAG, what);
        } else if (kind == 1) {
            snprintf(what, sizeof what, "step 4 receive (%d, ANY_TAG) #%ld", s_rr, step3);
            MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, s_rr, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            verify(buf, &st, s_rr, MPI_ANY_TAG, what);
        } else if (kind == 2) {
            int t = expected(s_rr, MPI_ANY_TAG) % NT;
            /* ask for a later tag when there is one, so the search skips some */
            int t2 = (t + 1 + (int)(step3 % 3)) % NT;
            if (head(s_rr, t2) >= 0)
                t = t2;
            snprintf(what, sizeof what, "step 4 receive (%d, %d) #%ld", s_rr, t, step3);
            MPI_CHECK(MPI_Recv(buf, MSGMAX, MPI_BYTE, s_rr, t, MPI_COMM_WORLD, &st));
            verify(buf, &st, s_rr, t, what);
        } else {
            int nb = left_of(s_rr) < BATCH ? left_of(s_rr) : BATCH;
            MPI_Request req[BATCH];
            MPI_Status sts[BATCH];
            for (int i = 0; i < nb; i++)
                MPI_CHECK(MPI_Irecv(buf + (size_t)i * MSGMAX, MSGMAX, MPI_BYTE, s_rr, MPI_ANY_TAG, MPI_COMM_WORLD,
                                    &req[i]));
            MPI_CHECK(MPI_Waitall(nb, req, sts));
            for (int i = 0; i < nb; i++) {
                snprintf(what, sizeof what, "step 4 batch Irecv (%d, ANY_TAG) %d of %d", s_rr, i, nb);
                verify(buf + (size_t)i * MSGMAX, &sts[i], s_rr, MPI_ANY_TAG, what);
            }
        }
        step3++;
        s_rr = s_rr % (P - 1) + 1;
    }
    int flag = 1;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "after draining all %d messages, MPI_Iprobe still finds one (source %d tag %d)", TOTAL,
          st.MPI_SOURCE, st.MPI_TAG);
    double t_all = mt_now() - t0;
    free(buf);
    return mt_finish("%d senders, %d unexpected messages queued in %.2f s, drained in MPI order: %ld last-message "
                     "(s,5), %ld (1,4), %ld (ANY_SOURCE,2), %ld mixed specific/ANY_TAG/ANY_SOURCE/batched; "
                     "total %.2f s",
                     P - 1, TOTAL, t_fill, step1, step2, n2, received - step1 - step2 - n2, t_all);
}

/* probe: MPI_Probe / MPI_Iprobe / MPI_Mprobe / MPI_Improbe with MPI_Mrecv /
 * MPI_Imrecv. 3 ranks (rank 0 probes and receives, ranks 1 and 2 send with
 * MPI_Isend + MPI_Wait so large messages never block the other steps).
 *
 *  1. Probe(1, 5) of 300 MPI_INTs: status source/tag, MPI_Get_count(MPI_INT).
 *  2. Probe of a 0-byte message: count 0.
 *  3. Probe(ANY_SOURCE, ANY_TAG) of a 1 MiB message from rank 2, received with
 *     the probed source/tag into a buffer of exactly the probed size.
 *  4. Probe finds the earliest and does not consume: rank 1 sends tags 3, 2, 1;
 *     Probe(1, ANY_TAG) twice -> tag 3, Probe(1, 1) -> tag 1, Recv(1, 1), then
 *     Recv(1, ANY_TAG) gives 3 then 2.
 *  5. Iprobe for a tag nobody sends -> flag 0; Iprobe polling finds a message
 *     sent after a go-message.
 *  6. Iprobe(ANY_SOURCE, ANY_TAG) loop over 2 x 6 messages of varied sizes,
 *     each received by the probed source/tag into an exactly-sized buffer;
 *     per-sender order checked.
 *  7. Mprobe is not stolen: rank 1 sends A then B (same tag). Mprobe(1, tag)
 *     -> A; Recv(1, tag) must get B; Mrecv(A) gets A. Again with
 *     (ANY_SOURCE, ANY_TAG) for both.
 *  8. Improbe(ANY_SOURCE, 2) polled -> a 1 MiB message C from rank 2, then an
 *     Irecv(2, 2) gets the following small D (not C), Imrecv(C) gets C.
 *  9. 8 messages from ranks 1 and 2 Mprobed (ANY_SOURCE, ANY_TAG) first, then
 *     Mrecv'd in reverse order; each gets what its Mprobe status described.
 * 10. MPI_PROC_NULL: Probe returns source MPI_PROC_NULL, tag MPI_ANY_TAG,
 *     count 0; Mprobe returns MPI_MESSAGE_NO_PROC, Mrecv on it likewise.
 * MPI calls: Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv, Get_count, Isend,
 * Irecv, Recv, Wait, Waitall, Send/Recv on a duplicate (control).
 */
#include "mpitest.h"

#define BIG (1 << 20)

static MPI_Comm ctl;
static long nchecks = 0;

static uint64_t seed_of(int step, int src, int id)
{
    return mt_seed(11, (uint64_t)step, (uint64_t)src, (uint64_t)id);
}

/* A message: bytes [0,8) = (sender, id) when size >= 8, then a pattern. */
static unsigned char *make_msg(int step, int id, int size)
{
    unsigned char *p = mt_malloc((size_t)size);
    mt_fill(p, (size_t)size, seed_of(step, mt_rank, id));
    if (size >= 8) {
        int32_t h[2] = {mt_rank, id};
        memcpy(p, h, 8);
    }
    return p;
}

static void check_msg(const unsigned char *p, int size, const MPI_Status *st, int step, int src, int id, int tag,
                      const char *what)
{
    CHECK(st->MPI_SOURCE == src, "step %d %s: MPI_SOURCE %d, expected %d", step, what, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "step %d %s: MPI_TAG %d, expected %d", step, what, st->MPI_TAG, tag);
    int n = mt_count_bytes(st);
    CHECK(n == size, "step %d %s: count %d bytes, expected %d", step, what, n, size);
    if (size >= 8) {
        int32_t h[2];
        memcpy(h, p, 8);
        CHECK(h[0] == src && h[1] == id, "step %d %s: got message (%d, #%d), expected (%d, #%d)", step, what, h[0],
              h[1], src, id);
    }
    unsigned char *ref = mt_malloc((size_t)size);
    mt_fill(ref, (size_t)size, seed_of(step, src, id));
    long bad = -1;
    for (int i = size >= 8 ? 8 : 0; i < size && bad < 0; i++)
        if (p[i] != ref[i])
            bad = i;
    free(ref);
    CHECK(bad < 0, "step %d %s: payload byte %ld wrong", step, what, bad);
    nchecks++;
}

/* Senders: wait for go(step) from rank 0. */
static void wait_go(int step)
{
    int s = -1;
    MPI_CHECK(MPI_Recv(&s, 1, MPI_INT, 0, 0, ctl, MPI_STATUS_IGNORE));
    CHECK(s == step, "control: expected go for step %d, got %d", step, s);
}

static void go(int rank, int step)
{
    MPI_CHECK(MPI_Send(&step, 1, MPI_INT, rank, 0, ctl));
}

/* Senders: Isend several messages (ids 0..n-1) in order, then wait. */
static void send_msgs(int step, int n, const int *tags, const int *sizes)
{
    MPI_Request req[16];
    unsigned char *bufs[16];
    for (int i = 0; i < n; i++) {
        bufs[i] = make_msg(step, i, sizes[i]);
        MPI_CHECK(MPI_Isend(bufs[i], sizes[i], MPI_BYTE, 0, tags[i], MPI_COMM_WORLD, &req[i]));
    }
    MPI_CHECK(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
    for (int i = 0; i < n; i++)
        free(bufs[i]);
}

static void sender(void)
{
    int r = mt_rank;
    /* 1: 300 ints */
    if (r == 1) {
        wait_go(1);
        int v[300];
        for (int i = 0; i < 300; i++)
            v[i] = i * 7 + 1;
        MPI_CHECK(MPI_Send(v, 300, MPI_INT, 0, 5, MPI_COMM_WORLD));
    }
    /* 2: 0 bytes */
    if (r == 2) {
        wait_go(2);
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD));
    }
    /* 3: 1 MiB from rank 2 */
    if (r == 2) {
        wait_go(3);
        send_msgs(3, 1, (int[]){6}, (int[]){BIG});
    }
    /* 4: tags 3, 2, 1 */
    if (r == 1) {
        wait_go(4);
        send_msgs(4, 3, (int[]){3, 2, 1}, (int[]){40, 48, 56});
    }
    /* 5: one message after go */
    if (r == 1) {
        wait_go(5);
        send_msgs(5, 1, (int[]){8}, (int[]){24});
    }
    /* 6: 6 messages each */
    {
        wait_go(6);
        int tags[6] = {1, 2, 3, 1, 2, 3}, sizes[6];
        for (int i = 0; i < 6; i++)
            sizes[i] = (i == 3) ? 70000 + r : 8 + 100 * i + r;
        send_msgs(6, 6, tags, sizes);
    }
    /* 7: A then B (tag 1), twice */
    if (r == 1) {
        wait_go(7);
        send_msgs(7, 4, (int[]){1, 1, 4, 4}, (int[]){100, 200, 150, 250});
    }
    /* 8: C (1 MiB) then D, tag 2, from rank 2 */
    if (r == 2) {
        wait_go(8);
        send_msgs(8, 2, (int[]){2, 2}, (int[]){BIG, 64});
    }
    /* 9: 4 each */
    {
        wait_go(9);
        send_msgs(9, 4, (int[]){10, 11, 10, 11}, (int[]){16 + r, 9000 + r, 32 + r, 100000 + r});
    }
}

static void receiver(void)
{
    MPI_Status st;
    int n;

    /* 1 */
    go(1, 1);
    MPI_CHECK(MPI_Probe(1, 5, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 5, "step 1: Probe status source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 300, "step 1: MPI_Get_count(MPI_INT) after Probe gave %d, expected 300", n);
    {
        int v[300];
        MPI_CHECK(MPI_Recv(v, n, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 300; i++)
            CHECK(v[i] == i * 7 + 1, "step 1: int %d is %d", i, v[i]);
        nchecks++;
    }

    /* 2 */
    go(2, 2);
    MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == 2 && st.MPI_TAG == 9 && mt_count_bytes(&st) == 0,
          "step 2: Probe of a 0-byte message: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
          mt_count_bytes(&st));
    MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 2, 9, MPI_COMM_WORLD, &st));
    CHECK(mt_count_bytes(&st) == 0, "step 2: received count %d", mt_count_bytes(&st));
    nchecks++;

    /* 3 */
    go(2, 3);
    MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    n = mt_count_bytes(&st);
    CHECK(st.MPI_SOURCE == 2 && st.MPI_TAG == 6 && n == BIG, "step 3: Probe(ANY, ANY) gave source %d tag %d count %d",
          st.MPI_SOURCE, st.MPI_TAG, n);
    {
        unsigned char *p = mt_malloc((size_t)n);
        MPI_CHECK(MPI_Recv(p, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        check_msg(p, BIG, &st, 3, 2, 0, 6, "1 MiB after Probe");
        free(p);
    }

    /* 4 */
    go(1, 4);
    {
        unsigned char p[64];
        MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == 3 && mt_count_bytes(&st) == 40, "step 4: Probe(1, ANY_TAG) gave tag %d count %d (want 3, 40)",
              st.MPI_TAG, mt_count_bytes(&st));
        MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == 3, "step 4: second Probe(1, ANY_TAG) gave tag %d: Probe consumed the message?",
              st.MPI_TAG);
        MPI_CHECK(MPI_Probe(1, 1, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == 1 && mt_count_bytes(&st) == 56, "step 4: Probe(1, 1) gave tag %d count %d", st.MPI_TAG,
              mt_count_bytes(&st));
        MPI_CHECK(MPI_Recv(p, 64, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st));
        check_msg(p, 56, &st, 4, 1, 2, 1, "Recv(1, 1)");
        MPI_CHECK(MPI_Recv(p, 64, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_msg(p, 40, &st, 4, 1, 0, 3, "first Recv(1, ANY_TAG)");
        MPI_CHECK(MPI_Recv(p, 64, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_msg(p, 48, &st, 4, 1, 1, 2, "second Recv(1, ANY_TAG)");
    }

    /* 5 */
    {
        int flag = 1;
        for (int i = 0; i < 100; i++) {
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &st));
            CHECK(!flag, "step 5: Iprobe for tag 12345, which nobody sends, returned flag 1 (source %d)",
                  st.MPI_SOURCE);
        }
        go(1, 5);
        while (!flag)
            MPI_CHECK(MPI_Iprobe(1, 8, MPI_COMM_WORLD, &flag, &st));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 8 && mt_count_bytes(&st) == 24,
              "step 5: Iprobe status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, mt_count_bytes(&st));
        unsigned char p[24];
        MPI_CHECK(MPI_Recv(p, 24, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &st));
        check_msg(p, 24, &st, 5, 1, 0, 8, "Recv after Iprobe");
    }

    /* 6 */
    go(1, 6);
    go(2, 6);
    {
        int next[3] = {0, 0, 0};
        int tags[6] = {1, 2, 3, 1, 2, 3};
        for (int got = 0; got < 12;) {
            int flag = 0;
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
            if (!flag)
                continue;
            int s = st.MPI_SOURCE;
            CHECK(s == 1 || s == 2, "step 6: Iprobe source %d", s);
            int id = next[s];
            CHECK(id < 6, "step 6: more than 6 messages from %d", s);
            int size = (id == 3) ? 70000 + s : 8 + 100 * id + s;
            n = mt_count_bytes(&st);
            CHECK(n == size && st.MPI_TAG == tags[id],
                  "step 6: Iprobe(ANY, ANY) found %d bytes tag %d from %d; its next message is #%d (%d bytes tag %d)",
                  n, st.MPI_TAG, s, id, size, tags[id]);
            unsigned char *p = mt_malloc((size_t)n);
            MPI_CHECK(MPI_Recv(p, n, MPI_BYTE, s, st.MPI_TAG, MPI_COMM_WORLD, &st));
            check_msg(p, size, &st, 6, s, id, tags[id], "Recv of the Iprobed message");
            free(p);
            next[s]++;
            got++;
        }
    }

    /* 7 */
    go(1, 7);
    {
        unsigned char pa[256], pb[256];
        MPI_Message m;
        MPI_CHECK(MPI_Mprobe(1, 1, MPI_COMM_WORLD, &m, &st));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 1 && mt_count_bytes(&st) == 100,
              "step 7: Mprobe(1, 1): source %d tag %d count %d (want A: 100 bytes)", st.MPI_SOURCE, st.MPI_TAG,
              mt_count_bytes(&st));
        CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "step 7: Mprobe returned no message handle");
        MPI_CHECK(MPI_Recv(pb, 256, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st));
        check_msg(pb, 200, &st, 7, 1, 1, 1, "Recv(1, 1) after Mprobe of A (must get B, not the mprobed A)");
        MPI_CHECK(MPI_Mrecv(pa, 256, MPI_BYTE, &m, &st));
        CHECK(m == MPI_MESSAGE_NULL, "step 7: Mrecv did not set the handle to MPI_MESSAGE_NULL");
        check_msg(pa, 100, &st, 7, 1, 0, 1, "Mrecv of A");
        /* same with full wildcards */
        MPI_CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 4 && mt_count_bytes(&st) == 150,
              "step 7: Mprobe(ANY, ANY): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, mt_count_bytes(&st));
        MPI_CHECK(MPI_Recv(pb, 256, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_msg(pb, 250, &st, 7, 1, 3, 4, "Recv(ANY, ANY) after Mprobe(ANY, ANY)");
        MPI_CHECK(MPI_Mrecv(pa, 256, MPI_BYTE, &m, &st));
        check_msg(pa, 150, &st, 7, 1, 2, 4, "Mrecv after Mprobe(ANY, ANY)");
    }

    /* 8 */
    go(2, 8);
    {
        MPI_Message m;
        int flag = 0;
        while (!flag)
            MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, &m, &st));
        CHECK(st.MPI_SOURCE == 2 && mt_count_bytes(&st) == BIG, "step 8: Improbe: source %d count %d (want C: 1 MiB)",
              st.MPI_SOURCE, mt_count_bytes(&st));
        unsigned char *pc = mt_malloc(BIG), pd[128];
        MPI_Request req[2];
        MPI_Status sts[2];
        MPI_CHECK(MPI_Irecv(pd, 128, MPI_BYTE, 2, 2, MPI_COMM_WORLD, &req[0]));
        MPI_CHECK(MPI_Imrecv(pc, BIG, MPI_BYTE, &m, &req[1]));
        CHECK(m == MPI_MESSAGE_NULL, "step 8: Imrecv did not set the handle to MPI_MESSAGE_NULL");
        MPI_CHECK(MPI_Waitall(2, req, sts));
        check_msg(pd, 64, &sts[0], 8, 2, 1, 2, "Irecv(2, 2) after Improbe of C (must get D)");
        check_msg(pc, BIG, &sts[1], 8, 2, 0, 2, "Imrecv of C");
        free(pc);
    }

    /* 9 */
    go(1, 9);
    go(2, 9);
    {
        MPI_Message m[8];
        MPI_Status pst[8];
        int next[3] = {0, 0, 0}, id[8];
        for (int i = 0; i < 8; i++) {
            MPI_CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m[i], &pst[i]));
            int s = pst[i].MPI_SOURCE;
            CHECK(s == 1 || s == 2, "step 9: Mprobe source %d", s);
            id[i] = next[s]++;
            CHECK(id[i] < 4, "step 9: more than 4 messages Mprobed from %d", s);
        }
        for (int i = 7; i >= 0; i--) {
            int s = pst[i].MPI_SOURCE;
            int sizes[4] = {16 + s, 9000 + s, 32 + s, 100000 + s}, tags[4] = {10, 11, 10, 11};
            n = mt_count_bytes(&pst[i]);
            CHECK(n == sizes[id[i]] && pst[i].MPI_TAG == tags[id[i]],
                  "step 9: Mprobe #%d from %d: %d bytes tag %d, expected message #%d (%d bytes tag %d)", i, s, n,
                  pst[i].MPI_TAG, id[i], sizes[id[i]], tags[id[i]]);
            unsigned char *p = mt_malloc((size_t)n);
            MPI_CHECK(MPI_Mrecv(p, n, MPI_BYTE, &m[i], &st));
            check_msg(p, n, &st, 9, s, id[i], tags[id[i]], "Mrecv in reverse order");
            free(p);
        }
    }

    /* 10 */
    {
        MPI_CHECK(MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count_bytes(&st) == 0,
              "step 10: Probe(MPI_PROC_NULL): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
              mt_count_bytes(&st));
        MPI_Message m;
        MPI_CHECK(MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st));
        CHECK(m == MPI_MESSAGE_NO_PROC, "step 10: Mprobe(MPI_PROC_NULL) did not return MPI_MESSAGE_NO_PROC");
        int x = 77;
        MPI_CHECK(MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && mt_count_bytes(&st) == 0 && x == 77,
              "step 10: Mrecv(MPI_MESSAGE_NO_PROC): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
              mt_count_bytes(&st));
        nchecks += 2;
    }
    int flag = 1;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "at the end, Iprobe(ANY, ANY) still finds a message (source %d tag %d)", st.MPI_SOURCE, st.MPI_TAG);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "probe", 3);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    if (mt_rank == 0)
        receiver();
    else if (mt_rank <= 2)
        sender();
    MPI_CHECK(MPI_Comm_free(&ctl));
    MPI_CHECK(MPI_Bcast(&nchecks, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    return mt_finish("%ld messages checked across 10 steps: Probe/Iprobe status and count, Mprobe/Improbe not stolen "
                     "by later receives, Mrecv/Imrecv in any order, MPI_PROC_NULL",
                     nchecks);
}

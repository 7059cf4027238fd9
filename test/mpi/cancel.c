/* cancel: MPI_Cancel of receives and sends, 2 ranks (rank 0 receives).
 *
 *  1. A posted receive that can never match, (1, tag 900) and then
 *     (ANY_SOURCE, ANY_TAG) with no traffic in flight: MPI_Cancel + MPI_Wait,
 *     MPI_Test_cancelled must be true. A message sent afterwards is received
 *     by a new receive, not swallowed by the cancelled (ANY, ANY) one.
 *  2. Cancel in the middle of the posted queue: R1 (1, 5), R2 (ANY, ANY),
 *     R3 (ANY, 5), R4 (1, ANY_TAG); R2 and R3 cancelled (true); then rank 1
 *     sends tag 5 and tag 6: R1 must get the tag-5 message, R4 the tag-6 one.
 *  3. A cancelled receive next to an unexpected non-matching message: rank 1's
 *     tag-20 message is waiting; Irecv(ANY, 21) is cancelled (true), then
 *     Recv(ANY, 20) gets the message.
 *  4. Cancel of a receive that already matched (8 B and 1 MiB; the sender used
 *     MPI_Ssend and reported completion on another communicator): once with
 *     MPI_Request_get_status polled until complete, once straight away;
 *     MPI_Test_cancelled must be false and the data correct.
 *  5. A persistent receive: Recv_init(1, 950), Start, Cancel, Wait ->
 *     cancelled; Start again, the message then sent arrives in it.
 *  6. Cancel of sends (Isend 8 B, Isend 1 MiB, Issend 8 B): Isend(seq 0),
 *     MPI_Cancel, Isend(seq 1) same tag, go-message, MPI_Waitall.
 *     MPI_Test_cancelled may be true or false (MPI allows both; ob1 never
 *     cancels sends). If false, rank 0 must receive seq 0 with correct data
 *     then seq 1; if true, seq 1 only.
 * MPI calls: Irecv, Isend, Issend, Ssend, Cancel, Wait, Waitall, Test_cancelled,
 * Request_get_status, Recv_init, Start, Request_free, Recv, Send.
 */
#include "mpitest.h"

static MPI_Comm ctl;
static long nchecks = 0;
static int send_cancelled = 0, send_not_cancelled = 0;

static int cancelled(const MPI_Status *st)
{
    int flag = -1;
    MPI_CHECK(MPI_Test_cancelled(st, &flag));
    return flag;
}

static void sync_go(int from_rank)
{
    if (mt_rank == from_rank)
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1 - from_rank, 0, ctl));
    else
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, from_rank, 0, ctl, MPI_STATUS_IGNORE));
}

static void case1(void)
{
    MPI_Request req;
    MPI_Status st;
    int x = 0;
    if (mt_rank == 0) {
        MPI_CHECK(MPI_Irecv(&x, 1, MPI_INT, 1, 900, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Cancel(&req));
        mt_wait_bounded(&req, &st, 10, "case 1: MPI_Wait after MPI_Cancel of a receive (1, 900) nothing matches");
        CHECK(cancelled(&st), "case 1: cancel of a receive (1, 900) that nothing matches: not cancelled");
        CHECK(req == MPI_REQUEST_NULL, "case 1: Wait did not free the cancelled request");
        MPI_CHECK(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Cancel(&req));
        mt_wait_bounded(&req, &st, 10, "case 1: MPI_Wait after MPI_Cancel of an (ANY_SOURCE, ANY_TAG) receive");
        CHECK(cancelled(&st), "case 1: cancel of an (ANY_SOURCE, ANY_TAG) receive with no traffic: not cancelled");
        CHECK(x == 0, "case 1: cancelled receive wrote its buffer");
    }
    sync_go(0);
    if (mt_rank == 1) {
        x = 1234;
        MPI_CHECK(MPI_Send(&x, 1, MPI_INT, 0, 901, MPI_COMM_WORLD));
    } else {
        int y = 0;
        MPI_CHECK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(y == 1234 && st.MPI_TAG == 901 && x == 0,
              "case 1: message after the cancels: got %d tag %d (want 1234, 901); cancelled buffer %d", y, st.MPI_TAG,
              x);
        CHECK(!cancelled(&st), "case 1: a normally completed receive reports cancelled");
        nchecks += 3;
    }
}

static void case2(void)
{
    if (mt_rank == 0) {
        int v[4] = {0, 0, 0, 0};
        MPI_Request r[4];
        MPI_Status st[4];
        MPI_CHECK(MPI_Irecv(&v[0], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &r[0]));
        MPI_CHECK(MPI_Irecv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]));
        MPI_CHECK(MPI_Irecv(&v[2], 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &r[2]));
        MPI_CHECK(MPI_Irecv(&v[3], 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r[3]));
        MPI_CHECK(MPI_Cancel(&r[1]));
        MPI_CHECK(MPI_Cancel(&r[2]));
        mt_wait_bounded(&r[1], &st[1], 10, "case 2: MPI_Wait after MPI_Cancel of R2 (ANY, ANY)");
        mt_wait_bounded(&r[2], &st[2], 10, "case 2: MPI_Wait after MPI_Cancel of R3 (ANY, 5)");
        CHECK(cancelled(&st[1]) && cancelled(&st[2]), "case 2: cancel of posted receives R2/R3: cancelled %d/%d",
              cancelled(&st[1]), cancelled(&st[2]));
        sync_go(0);
        MPI_CHECK(MPI_Wait(&r[0], &st[0]));
        MPI_CHECK(MPI_Wait(&r[3], &st[3]));
        CHECK(v[0] == 55 && st[0].MPI_TAG == 5, "case 2: R1 (1, 5) got %d tag %d, expected 55 tag 5", v[0],
              st[0].MPI_TAG);
        CHECK(v[3] == 66 && st[3].MPI_TAG == 6, "case 2: R4 (1, ANY_TAG) got %d tag %d, expected 66 tag 6", v[3],
              st[3].MPI_TAG);
        CHECK(v[1] == 0 && v[2] == 0, "case 2: cancelled receives wrote their buffers");
        nchecks += 4;
    } else {
        sync_go(0);
        int a = 55, b = 66;
        MPI_CHECK(MPI_Send(&a, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Send(&b, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
    }
}

static void case3(void)
{
    if (mt_rank == 1) {
        int a = 2020;
        MPI_Request req;
        MPI_CHECK(MPI_Isend(&a, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &req));
        sync_go(1);
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        sync_go(1);
        int x = 0, y = 0;
        MPI_Request req;
        MPI_Status st;
        MPI_CHECK(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Cancel(&req));
        mt_wait_bounded(&req, &st, 10, "case 3: MPI_Wait after MPI_Cancel of Irecv(ANY, 21)");
        CHECK(cancelled(&st), "case 3: Irecv(ANY, 21) with only a tag-20 message around: not cancelled");
        MPI_CHECK(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &st));
        CHECK(y == 2020 && x == 0, "case 3: Recv(ANY, 20) got %d (want 2020), cancelled buffer %d", y, x);
        nchecks += 2;
    }
}

static void case4(int size, int poll)
{
    unsigned char *buf = mt_malloc((size_t)size);
    uint64_t seed = mt_seed(41, (uint64_t)size, (uint64_t)poll, 0);
    int tag = 30 + poll;
    if (mt_rank == 1) {
        mt_fill(buf, (size_t)size, seed);
        MPI_CHECK(MPI_Ssend(buf, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
        sync_go(1);
    } else {
        MPI_Request req;
        MPI_Status st;
        memset(buf, 0, (size_t)size);
        MPI_CHECK(MPI_Irecv(buf, size, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req));
        sync_go(1); /* the Ssend completed, so our receive has matched */
        if (poll) {
            int flag = 0;
            while (!flag)
                MPI_CHECK(MPI_Request_get_status(req, &flag, &st));
        }
        MPI_CHECK(MPI_Cancel(&req));
        MPI_CHECK(MPI_Wait(&req, &st));
        CHECK(!cancelled(&st), "case 4: cancel of a receive of %d bytes that had already matched%s reports cancelled",
              size, poll ? " and completed" : "");
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == tag && mt_count_bytes(&st) == size,
              "case 4 (%d bytes): status source %d tag %d count %d", size, st.MPI_SOURCE, st.MPI_TAG,
              mt_count_bytes(&st));
        long bad = mt_check(buf, (size_t)size, seed);
        CHECK(bad < 0, "case 4 (%d bytes, cancel after match): byte %ld wrong", size, bad);
        nchecks++;
    }
    free(buf);
}

static void case5(void)
{
    int x = 0;
    if (mt_rank == 0) {
        MPI_Request req;
        MPI_Status st;
        MPI_CHECK(MPI_Recv_init(&x, 1, MPI_INT, 1, 950, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Start(&req));
        MPI_CHECK(MPI_Cancel(&req));
        mt_wait_bounded(&req, &st, 10, "case 5: MPI_Wait after MPI_Cancel of an active persistent receive");
        CHECK(cancelled(&st), "case 5: cancel of an active persistent receive with no sender: not cancelled");
        CHECK(req != MPI_REQUEST_NULL, "case 5: Wait freed the persistent request");
        MPI_CHECK(MPI_Start(&req));
        sync_go(0);
        MPI_CHECK(MPI_Wait(&req, &st));
        CHECK(!cancelled(&st) && x == 9500 && st.MPI_TAG == 950,
              "case 5: restarted persistent receive: cancelled %d value %d tag %d", cancelled(&st), x, st.MPI_TAG);
        MPI_CHECK(MPI_Request_free(&req));
        nchecks += 2;
    } else {
        sync_go(0);
        x = 9500;
        MPI_CHECK(MPI_Send(&x, 1, MPI_INT, 0, 950, MPI_COMM_WORLD));
    }
}

static void case6(int size, int sync, int tag)
{
    unsigned char *b0 = mt_malloc((size_t)size), *b1 = mt_malloc(16);
    uint64_t seed = mt_seed(42, (uint64_t)size, (uint64_t)sync, 0);
    if (mt_rank == 1) {
        MPI_Request req[2];
        MPI_Status st[2];
        mt_fill(b0, (size_t)size, seed);
        if (size >= 4)
            memcpy(b0, "SEQ0", 4);
        memcpy(b1, "SEQ1", 4);
        if (sync)
            MPI_CHECK(MPI_Issend(b0, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req[0]));
        else
            MPI_CHECK(MPI_Isend(b0, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req[0]));
        MPI_CHECK(MPI_Cancel(&req[0]));
        MPI_CHECK(MPI_Isend(b1, 4, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req[1]));
        sync_go(1);
        MPI_CHECK(MPI_Waitall(2, req, st));
        int c = cancelled(&st[0]);
        MPI_CHECK(MPI_Send(&c, 1, MPI_INT, 0, 1, ctl));
    } else {
        unsigned char *r = mt_malloc((size_t)size + 16);
        MPI_Status st;
        sync_go(1);
        MPI_CHECK(MPI_Recv(r, size + 16, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
        int first_is_seq0 = !(mt_count_bytes(&st) == 4 && memcmp(r, "SEQ1", 4) == 0);
        if (first_is_seq0) {
            CHECK(mt_count_bytes(&st) == size, "case 6: first message has %d bytes, expected %d or the 4-byte SEQ1",
                  mt_count_bytes(&st), size);
            unsigned char *ref = mt_malloc((size_t)size);
            mt_fill(ref, (size_t)size, seed);
            memcpy(ref, "SEQ0", 4);
            CHECK(memcmp(r, ref, (size_t)size) == 0, "case 6: the not-cancelled %s of %d bytes arrived corrupted",
                  sync ? "Issend" : "Isend", size);
            free(ref);
            MPI_CHECK(MPI_Recv(r, size + 16, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
            CHECK(mt_count_bytes(&st) == 4 && memcmp(r, "SEQ1", 4) == 0, "case 6: second message is not SEQ1");
        }
        int c = -1;
        MPI_CHECK(MPI_Recv(&c, 1, MPI_INT, 1, 1, ctl, MPI_STATUS_IGNORE));
        if (c) {
            CHECK(!first_is_seq0, "case 6: %s of %d bytes reported cancelled but was delivered",
                  sync ? "Issend" : "Isend", size);
            send_cancelled++;
        } else {
            CHECK(first_is_seq0, "case 6: %s of %d bytes reported not cancelled but was never delivered",
                  sync ? "Issend" : "Isend", size);
            send_not_cancelled++;
        }
        free(r);
        nchecks++;
    }
    free(b0);
    free(b1);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "cancel", 2);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    if (mt_rank < 2) {
        case1();
        case2();
        case3();
        case4(8, 1);
        case4(8, 0);
        case4(1 << 20, 1);
        case4(1 << 20, 0);
        case5();
        case6(8, 0, 60);
        case6(1 << 20, 0, 61);
        case6(8, 1, 62);
    }
    MPI_CHECK(MPI_Comm_free(&ctl));
    return mt_finish("%ld checks: receive cancels (never-matching, ANY/ANY, mid-queue, next to unexpected, "
                     "persistent) cancelled, matched receives not cancelled; sends: %d cancelled, %d completed "
                     "normally and delivered",
                     nchecks, send_cancelled, send_not_cancelled);
}

/* ssend: synchronous mode, 2 ranks.
 *
 * Issend must not complete before the receiver matched it. For sizes 0 B,
 * 8 B, 64 KiB and 1 MiB:
 *   rank 0: MPI_Issend(tag T); 100 times MPI_Test / MPI_Request_get_status,
 *           1 ms apart, and every one must say "not complete"; then it sends a
 *           go-message on a separate communicator, and MPI_Waits.
 *   rank 1: has posted only a non-matching MPI_Irecv (tag T+1000) and a receive
 *           for the go-message, so nothing can match the Issend before go has
 *           been sent; after go it sleeps 100 ms, notes the time t_post, posts
 *           the matching receive (ANY_SOURCE on odd cases), and reports t_post.
 *   The early Tests cannot be flaky: no matching receive exists while they
 *   run. If both ranks are on one host (same CLOCK_MONOTONIC), rank 0 also
 *   checks that its Wait returned after t_post (t_post is read before the
 *   receive is posted, so any correct implementation satisfies this).
 * Also: an Issend to a pre-posted receive completes; blocking MPI_Ssend of
 * 0 B, 8 B and 1 MiB to a receiver that sleeps 100 ms before posting returns
 * only after t_post (same host) and delivers the right data.
 * MPI calls: Issend, Test, Request_get_status, Wait, Ssend, Irecv, Recv,
 * Send, Sendrecv, Barrier, Get_processor_name. Ranks >= 2 only join the
 * barriers.
 */
#include "mpitest.h"

static MPI_Comm ctl;
static int same_host = 0;
static long checked = 0;
static int timing_checks = 0;

static void check_data(const unsigned char *buf, const MPI_Status *st, size_t size, uint64_t seed, int tag,
                       const char *what)
{
    CHECK(st->MPI_SOURCE == 0 && st->MPI_TAG == tag, "%s size %zu: source %d tag %d", what, size, st->MPI_SOURCE,
          st->MPI_TAG);
    CHECK(mt_count_bytes(st) == (int)size, "%s size %zu: count %d", what, size, mt_count_bytes(st));
    long bad = mt_check(buf, size, seed);
    CHECK(bad < 0, "%s size %zu: byte %ld wrong", what, size, bad);
    checked++;
}

static void issend_case(int c, size_t size)
{
    int tag = 10 + c;
    uint64_t seed = mt_seed(21, size, (uint64_t)c, 0);
    unsigned char *buf = mt_malloc(size);
    MPI_Status st;
    if (mt_rank == 0) {
        mt_fill(buf, size, seed);
        MPI_Request req;
        MPI_CHECK(MPI_Issend(buf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req));
        for (int i = 0; i < 100; i++) {
            int flag = 1;
            if (i % 2)
                MPI_CHECK(MPI_Test(&req, &flag, &st));
            else
                MPI_CHECK(MPI_Request_get_status(req, &flag, &st));
            CHECK(!flag,
                  "MPI_Issend of %zu bytes completed (test %d) although the receiver has not posted a matching "
                  "receive yet (it waits for our go-message)",
                  size, i);
            mt_sleep_ms(1);
        }
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, c, ctl)); /* go */
        MPI_CHECK(MPI_Wait(&req, &st));
        double t_done = mt_now(), t_post = 0;
        MPI_CHECK(MPI_Recv(&t_post, 1, MPI_DOUBLE, 1, c, ctl, MPI_STATUS_IGNORE));
        if (same_host) {
            CHECK(t_done >= t_post,
                  "MPI_Issend of %zu bytes: Wait returned %.1f ms before the receiver posted its receive", size,
                  (t_post - t_done) * 1e3);
            timing_checks++;
        }
        /* complete the receiver's helper receive */
        MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, tag + 1000, MPI_COMM_WORLD));
    } else {
        MPI_Request other;
        MPI_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, 0, tag + 1000, MPI_COMM_WORLD, &other));
        MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, c, ctl, MPI_STATUS_IGNORE));
        mt_sleep_ms(100);
        double t_post = mt_now();
        memset(buf, 0, size);
        MPI_CHECK(MPI_Recv(buf, (int)size, MPI_BYTE, c % 2 ? MPI_ANY_SOURCE : 0, tag, MPI_COMM_WORLD, &st));
        check_data(buf, &st, size, seed, tag, "Issend");
        MPI_CHECK(MPI_Send(&t_post, 1, MPI_DOUBLE, 0, c, ctl));
        MPI_CHECK(MPI_Wait(&other, &st));
        CHECK(st.MPI_TAG == tag + 1000, "helper receive got tag %d", st.MPI_TAG);
    }
    free(buf);
}

static void issend_preposted(size_t size)
{
    unsigned char *buf = mt_malloc(size);
    uint64_t seed = mt_seed(22, size, 0, 0);
    MPI_Status st;
    MPI_Request req;
    if (mt_rank == 0) {
        mt_fill(buf, size, seed);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Issend(buf, (int)size, MPI_BYTE, 1, 30, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Wait(&req, &st));
    } else {
        MPI_CHECK(MPI_Irecv(buf, (int)size, MPI_BYTE, 0, 30, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&req, &st));
        check_data(buf, &st, size, seed, 30, "Issend to a pre-posted receive");
    }
    free(buf);
}

static void ssend_case(int c, size_t size)
{
    unsigned char *buf = mt_malloc(size);
    uint64_t seed = mt_seed(23, size, (uint64_t)c, 0);
    MPI_Status st;
    if (mt_rank == 0) {
        mt_fill(buf, size, seed);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Ssend(buf, (int)size, MPI_BYTE, 1, 40 + c, MPI_COMM_WORLD));
        double t_done = mt_now(), t_post = 0;
        MPI_CHECK(MPI_Recv(&t_post, 1, MPI_DOUBLE, 1, 40 + c, ctl, MPI_STATUS_IGNORE));
        if (same_host) {
            CHECK(t_done >= t_post, "MPI_Ssend of %zu bytes returned %.1f ms before the receiver posted its receive",
                  size, (t_post - t_done) * 1e3);
            timing_checks++;
        }
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        mt_sleep_ms(100);
        double t_post = mt_now();
        memset(buf, 0, size);
        MPI_CHECK(MPI_Recv(buf, (int)size, MPI_BYTE, 0, 40 + c, MPI_COMM_WORLD, &st));
        check_data(buf, &st, size, seed, 40 + c, "Ssend");
        MPI_CHECK(MPI_Send(&t_post, 1, MPI_DOUBLE, 0, 40 + c, ctl));
    }
    free(buf);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "ssend", 2);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, other[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_CHECK(MPI_Get_processor_name(name, &len));
    if (mt_rank < 2) {
        MPI_CHECK(MPI_Sendrecv(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - mt_rank, 1, other, MPI_MAX_PROCESSOR_NAME,
                               MPI_CHAR, 1 - mt_rank, 1, ctl, MPI_STATUS_IGNORE));
        same_host = strcmp(name, other) == 0;
    }
    if (mt_rank < 2) {
        /* the Barriers below run on WORLD; ranks >= 2 only join those */
        size_t sizes[4] = {0, 8, 64 << 10, 1 << 20};
        for (int c = 0; c < 4; c++)
            issend_case(c, sizes[c]);
        issend_preposted(8);
        issend_preposted(1 << 20);
        ssend_case(0, 0);
        ssend_case(1, 8);
        ssend_case(2, 1 << 20);
    } else {
        for (int i = 0; i < 5; i++)
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHECK(MPI_Comm_free(&ctl));
    MPI_CHECK(MPI_Bcast(&timing_checks, 1, MPI_INT, 0, MPI_COMM_WORLD));
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("Issend of 0 B/8 B/64 KiB/1 MiB incomplete over 100 tests before the receive was posted; %d "
                     "completion-after-post timing checks (same host: %s); %ld messages verified incl. Ssend 0 B, 8 B, "
                     "1 MiB",
                     timing_checks, timing_checks ? "yes" : "no", total);
}

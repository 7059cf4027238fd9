/* status_fields: single-completion calls leave status.MPI_ERROR alone (MPI
 * 4.0 section 3.2.5: only calls that return MPI_ERR_IN_STATUS set it), and
 * the other fields are the message's. 2 ranks.
 *
 * Rank 1 sets MPI_ERROR to a sentinel before each of MPI_Recv, MPI_Probe,
 * MPI_Iprobe (found and not found), MPI_Mprobe + MPI_Mrecv, MPI_Improbe +
 * MPI_Mrecv, MPI_Sendrecv, MPI_Wait, MPI_Test (both outcomes), MPI_Imrecv +
 * MPI_Wait, a persistent receive's MPI_Wait, and a cancelled receive's
 * MPI_Wait, and checks it afterwards; MPI_SOURCE, MPI_TAG and the count must
 * be the message's. (MPICH pt2pt/mprobe and threads/pt2pt mt_*probe* check
 * the same.)
 */
#include "mpitest.h"

#define SENTINEL 0x5eed

static long checked = 0;

static void expect(const MPI_Status *st, int src, int tag, int count, const char *call)
{
    int n = -1;
    CHECK(st->MPI_ERROR == SENTINEL, "%s wrote status.MPI_ERROR (%d)", call, st->MPI_ERROR);
    if (src >= 0) {
        MPI_CHECK(MPI_Get_count(st, MPI_INT, &n));
        CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && n == count,
              "%s: status source %d tag %d count %d, expected %d %d %d", call, st->MPI_SOURCE, st->MPI_TAG,
              n, src, tag, count);
    }
    checked++;
}

static MPI_Status fresh(void)
{
    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.MPI_ERROR = SENTINEL;
    return st;
}

int main(int argc, char **argv)
{
    enum { MSGS = 10 };
    int v[4] = {1, 2, 3, 4};
    mt_init(&argc, &argv, "status_fields", 2);
    if (mt_rank == 0) {
        /* tags 1..MSGS, 3 ints each; then the Sendrecv partner */
        for (int t = 1; t <= MSGS; t++)
            MPI_CHECK(MPI_Send(v, 3, MPI_INT, 1, t, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Sendrecv(v, 2, MPI_INT, 1, 50, v, 4, MPI_INT, 1, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (mt_rank == 1) {
        int w[4];
        int flag = 0;
        MPI_Message m;
        MPI_Request r;
        MPI_Status st;

        st = fresh();
        MPI_CHECK(MPI_Recv(w, 4, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
        expect(&st, 0, 1, 3, "MPI_Recv");

        st = fresh();
        MPI_CHECK(MPI_Probe(0, 2, MPI_COMM_WORLD, &st));
        expect(&st, 0, 2, 3, "MPI_Probe");
        st = fresh();
        do {
            MPI_CHECK(MPI_Iprobe(0, 2, MPI_COMM_WORLD, &flag, &st));
        } while (!flag);
        expect(&st, 0, 2, 3, "MPI_Iprobe (found)");
        st = fresh();
        MPI_CHECK(MPI_Iprobe(0, 999, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "MPI_Iprobe found a message with tag 999");
        expect(&st, -1, 0, 0, "MPI_Iprobe (not found)");
        MPI_CHECK(MPI_Recv(w, 4, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));

        st = fresh();
        MPI_CHECK(MPI_Mprobe(0, 3, MPI_COMM_WORLD, &m, &st));
        expect(&st, 0, 3, 3, "MPI_Mprobe");
        st = fresh();
        MPI_CHECK(MPI_Mrecv(w, 4, MPI_INT, &m, &st));
        expect(&st, 0, 3, 3, "MPI_Mrecv");

        st = fresh();
        do {
            MPI_CHECK(MPI_Improbe(0, 4, MPI_COMM_WORLD, &flag, &m, &st));
        } while (!flag);
        expect(&st, 0, 4, 3, "MPI_Improbe");
        st = fresh();
        MPI_CHECK(MPI_Imrecv(w, 4, MPI_INT, &m, &r));
        MPI_CHECK(MPI_Wait(&r, &st));
        expect(&st, 0, 4, 3, "MPI_Imrecv + MPI_Wait");

        st = fresh();
        MPI_CHECK(MPI_Irecv(w, 4, MPI_INT, 0, 5, MPI_COMM_WORLD, &r));
        MPI_CHECK(MPI_Wait(&r, &st));
        expect(&st, 0, 5, 3, "MPI_Irecv + MPI_Wait");

        st = fresh();
        MPI_CHECK(MPI_Irecv(w, 4, MPI_INT, 0, 6, MPI_COMM_WORLD, &r));
        do {
            MPI_CHECK(MPI_Test(&r, &flag, &st));
        } while (!flag);
        expect(&st, 0, 6, 3, "MPI_Test (complete)");

        st = fresh();
        MPI_CHECK(MPI_Recv_init(w, 4, MPI_INT, 0, 7, MPI_COMM_WORLD, &r));
        MPI_CHECK(MPI_Start(&r));
        MPI_CHECK(MPI_Wait(&r, &st));
        expect(&st, 0, 7, 3, "persistent MPI_Start + MPI_Wait");
        MPI_CHECK(MPI_Request_free(&r));

        st = fresh();
        MPI_CHECK(MPI_Irecv(w, 4, MPI_INT, 0, 12345, MPI_COMM_WORLD, &r));
        MPI_CHECK(MPI_Test(&r, &flag, &st));
        CHECK(!flag, "a receive with tag 12345 completed");
        expect(&st, -1, 0, 0, "MPI_Test (incomplete)");
        MPI_CHECK(MPI_Cancel(&r));
        st = fresh();
        MPI_CHECK(MPI_Wait(&r, &st));
        MPI_CHECK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "the receive with tag 12345 was not cancelled");
        expect(&st, -1, 0, 0, "MPI_Wait (cancelled)");

        for (int t = 8; t <= MSGS; t++) {
            st = fresh();
            MPI_CHECK(MPI_Recv(w, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            expect(&st, 0, t, 3, "MPI_Recv (ANY_SOURCE, ANY_TAG)");
        }

        st = fresh();
        MPI_CHECK(MPI_Sendrecv(v, 4, MPI_INT, 0, 51, w, 4, MPI_INT, 0, 50, MPI_COMM_WORLD, &st));
        expect(&st, 0, 50, 2, "MPI_Sendrecv");
    }
    long total = 0; /* rank 1 checks, rank 0 reports */
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    CHECK(mt_rank != 0 || total > 0, "no completion was checked");
    return mt_finish("MPI_ERROR untouched and fields right in %ld completions", total);
}

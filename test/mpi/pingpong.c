/* pingpong: ranks pair up (0-1, 2-3, ...; an odd last rank idles) and
 * exchange messages of 0 B, 1 B and every power of two up to 16 MiB.
 *
 * For every size, several iterations of
 *   - blocking:    MPI_Send / MPI_Recv (receive buffer 16 B larger than the
 *                  message: the tail must stay untouched and MPI_Get_count
 *                  must give the message size);
 *   - nonblocking: MPI_Irecv + MPI_Isend in both directions at once, the
 *                  receive posted before the send on even iterations and
 *                  after it on odd ones, completed with MPI_Waitall on even
 *                  and an MPI_Testall loop on odd iterations.
 * The payload pattern depends on size, iteration and direction, and every
 * byte is checked, as are MPI_SOURCE, MPI_TAG and the count.
 * MPI calls: Send, Recv, Isend, Irecv, Waitall, Testall, Get_count.
 */
#include "mpitest.h"

#define MAX_SIZE (16u << 20)
#define TAIL 16
#define CANARY 0x5Au

static int iterations(size_t size)
{
    if (size <= 4096)
        return 20;
    if (size <= (256u << 10))
        return 8;
    if (size <= (2u << 20))
        return 4;
    return 2;
}

static void check_msg(const unsigned char *buf, size_t size, uint64_t seed, const MPI_Status *st,
                      int src, int tag, const char *what)
{
    CHECK(st->MPI_SOURCE == src, "%s size %zu: MPI_SOURCE %d, expected %d", what, size, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "%s size %zu: MPI_TAG %d, expected %d", what, size, st->MPI_TAG, tag);
    int n = mt_count_bytes(st);
    CHECK(n == (int)size, "%s size %zu: MPI_Get_count gave %d bytes", what, size, n);
    long bad = mt_check(buf, size, seed);
    CHECK(bad < 0, "%s size %zu: payload byte %ld wrong", what, size, bad);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "pingpong", 2);
    int partner = mt_rank ^ 1;
    int active = partner < mt_size;
    int first = mt_rank < partner; /* sends first in the blocking exchange */
    long checked = 0;
    int nsizes = 0;

    unsigned char *sbuf = mt_malloc(MAX_SIZE + TAIL);
    unsigned char *rbuf = mt_malloc(MAX_SIZE + TAIL);

    for (size_t size = 0; size <= MAX_SIZE && active; size = size ? size * 2 : 1) {
        nsizes++;
        int iters = iterations(size);
        for (int it = 0; it < iters; it++) {
            int tag = (nsizes * 64 + it) % 32000;
            MPI_Status st;
            /* blocking: first -> second, then the reply */
            uint64_t s_out = mt_seed(1, size, (uint64_t)it, (uint64_t)mt_rank);
            uint64_t s_in = mt_seed(1, size, (uint64_t)it, (uint64_t)partner);
            mt_fill(sbuf, size, s_out);
            memset(rbuf, CANARY, size + TAIL);
            if (first) {
                MPI_CHECK(MPI_Send(sbuf, (int)size, MPI_BYTE, partner, tag, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(rbuf, (int)size + TAIL, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
            } else {
                MPI_CHECK(MPI_Recv(rbuf, (int)size + TAIL, MPI_BYTE, partner, tag, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Send(sbuf, (int)size, MPI_BYTE, partner, tag, MPI_COMM_WORLD));
            }
            check_msg(rbuf, size, s_in, &st, partner, tag, "blocking");
            for (int k = 0; k < TAIL; k++)
                CHECK(rbuf[size + (size_t)k] == CANARY,
                      "blocking size %zu: receive buffer byte %zu past the message was overwritten", size,
                      size + (size_t)k);
            checked++;

            /* nonblocking, both directions at once */
            s_out = mt_seed(2, size, (uint64_t)it, (uint64_t)mt_rank);
            s_in = mt_seed(2, size, (uint64_t)it, (uint64_t)partner);
            mt_fill(sbuf, size, s_out);
            memset(rbuf, CANARY, size);
            MPI_Request req[2];
            MPI_Status sts[2];
            if (it % 2 == 0) {
                MPI_CHECK(MPI_Irecv(rbuf, (int)size, MPI_BYTE, partner, tag + 1, MPI_COMM_WORLD, &req[0]));
                MPI_CHECK(MPI_Isend(sbuf, (int)size, MPI_BYTE, partner, tag + 1, MPI_COMM_WORLD, &req[1]));
                MPI_CHECK(MPI_Waitall(2, req, sts));
            } else {
                MPI_CHECK(MPI_Isend(sbuf, (int)size, MPI_BYTE, partner, tag + 1, MPI_COMM_WORLD, &req[1]));
                MPI_CHECK(MPI_Irecv(rbuf, (int)size, MPI_BYTE, partner, tag + 1, MPI_COMM_WORLD, &req[0]));
                int done = 0;
                while (!done)
                    MPI_CHECK(MPI_Testall(2, req, &done, sts));
            }
            CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL,
                  "nonblocking size %zu: completed requests not set to MPI_REQUEST_NULL", size);
            check_msg(rbuf, size, s_in, &sts[0], partner, tag + 1, "nonblocking");
            checked++;
        }
    }

    free(sbuf);
    free(rbuf);
    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("%d sizes 0 B..16 MiB, %ld messages verified, blocking and nonblocking", nsizes, total);
}

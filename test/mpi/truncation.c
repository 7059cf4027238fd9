/* truncation: a message longer than the receive buffer, 2 ranks, with
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD.
 *
 * For receive buffers of 8 B, 4 KiB, 64 KiB and 4 MiB, rank 1 sends a message
 * of twice that size and rank 0 receives it four ways:
 *   recv     MPI_Recv: the returned code's class must be MPI_ERR_TRUNCATE;
 *   wait     MPI_Irecv + MPI_Wait: likewise;
 *   waitall  MPI_Irecv of the truncated message plus a normal MPI_Irecv, then
 *            MPI_Waitall: MPI_ERR_IN_STATUS, the truncated one's
 *            status.MPI_ERROR of class MPI_ERR_TRUNCATE, the other MPI_SUCCESS
 *            and its data intact;
 *   mrecv    MPI_Mprobe + MPI_Mrecv: class MPI_ERR_TRUNCATE.
 * In every case the bytes after the buffer (a guard region as long as the
 * excess plus 64 KiB) and the 64 bytes before it are filled with a canary and
 * must be untouched. After every case the pair does a normal exchange: a
 * message of the full size received into a big enough buffer (content
 * checked) and a reply, so the communicator still works.
 *
 * All 16 cases run even when some fail; each failure is printed on its own
 * line, then the test fails naming how many cases failed.
 *
 * EXPECTED ON STOCK ob1 (Open MPI 4.1.4): this test FAILS, and that is the
 * test doing its job. When a truncated message takes a rendezvous path with
 * RDMA / single-copy transfers, ob1 transfers the sender's full length into
 * the receive buffer and overwrites the guard right after it (it still
 * reports MPI_ERR_TRUNCATE). Measured: with the default shared-memory BTL
 * (vader, CMA single copy; eager limit 4 KiB) the 4 KiB, 64 KiB and 4 MiB
 * cases fail; with "--mca btl self,tcp" (eager limit 64 KiB) the 64 KiB and
 * 4 MiB cases fail; the 8 B cases always pass; with
 * "--mca btl_vader_single_copy_mechanism none" all 16 cases pass, which shows
 * the canary check itself is sound. A correct PML must pass all of them.
 * MPI calls: Recv, Irecv, Wait, Waitall, Mprobe, Mrecv, Send, Error_class,
 * Comm_set_errhandler (via the shared init).
 */
#include "mpitest.h"

#define PRE 64
#define GUARD_EXTRA (64 << 10)
#define CANARY 0xC3

static int failures = 0, cases = 0;
static char first_failure[512] = "";

static void report(size_t size, const char *variant, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(size_t size, const char *variant, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "truncation: buffer %zu B, %s: %s\n", size, variant, msg);
    fflush(stderr);
    if (!failures)
        snprintf(first_failure, sizeof first_failure, "buffer %zu B, %s: %s", size, variant, msg);
    failures++;
}

static int is_truncate(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls == MPI_ERR_TRUNCATE;
}

/* Normal exchange after each case: rank 1 sends len bytes, rank 0 replies. */
static int follow_up(size_t len, int c)
{
    unsigned char *buf = mt_malloc(len);
    uint64_t seed = mt_seed(52, len, (uint64_t)c, 0);
    MPI_Status st;
    int ok = 1;
    if (mt_rank == 1) {
        mt_fill(buf, len, seed);
        MPI_CHECK(MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
        int reply = 0;
        MPI_CHECK(MPI_Recv(&reply, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &st));
        CHECK(reply == c, "follow-up reply %d, expected %d", reply, c);
    } else {
        memset(buf, 0, len);
        int rc = MPI_Recv(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
        if (rc != MPI_SUCCESS || mt_count_bytes(&st) != (int)len || mt_check(buf, len, seed) >= 0) {
            ok = 0;
        }
        MPI_CHECK(MPI_Send(&c, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
    }
    free(buf);
    return ok;
}

static void one_case(size_t size, int variant)
{
    static const char *names[4] = {"recv", "wait", "waitall", "mrecv"};
    const char *vn = names[variant];
    size_t len = 2 * size; /* the message */
    size_t guard = len - size + GUARD_EXTRA;
    uint64_t seed = mt_seed(51, size, (uint64_t)variant, 0);
    int c = (int)(size % 100000) * 4 + variant;
    if (mt_rank == 1) {
        unsigned char *m = mt_malloc(len);
        mt_fill(m, len, seed);
        if (variant == 2) {
            int small = 777;
            MPI_CHECK(MPI_Send(&small, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
        }
        MPI_CHECK(MPI_Send(m, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
        free(m);
    } else {
        cases++;
        unsigned char *region = mt_malloc(PRE + size + guard);
        unsigned char *buf = region + PRE;
        memset(region, CANARY, PRE + size + guard);
        MPI_Status st;
        int rc;
        if (variant == 0) {
            rc = MPI_Recv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st);
            if (!is_truncate(rc))
                report(size, vn, "MPI_Recv returned %s, expected class MPI_ERR_TRUNCATE", mt_errstr(rc));
        } else if (variant == 1) {
            MPI_Request req;
            MPI_CHECK(MPI_Irecv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req));
            rc = MPI_Wait(&req, &st);
            if (!is_truncate(rc))
                report(size, vn, "MPI_Wait returned %s, expected class MPI_ERR_TRUNCATE", mt_errstr(rc));
        } else if (variant == 2) {
            MPI_Request req[2];
            MPI_Status sts[2];
            int small = 0;
            MPI_CHECK(MPI_Irecv(&small, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &req[0]));
            MPI_CHECK(MPI_Irecv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[1]));
            sts[0].MPI_ERROR = sts[1].MPI_ERROR = -12345;
            rc = MPI_Waitall(2, req, sts);
            if (rc != MPI_ERR_IN_STATUS)
                report(size, vn, "MPI_Waitall returned %s, expected MPI_ERR_IN_STATUS", mt_errstr(rc));
            else {
                if (!is_truncate(sts[1].MPI_ERROR))
                    report(size, vn, "status.MPI_ERROR of the truncated receive is %s, expected class "
                                     "MPI_ERR_TRUNCATE",
                           mt_errstr(sts[1].MPI_ERROR));
                if (sts[0].MPI_ERROR != MPI_SUCCESS)
                    report(size, vn, "status.MPI_ERROR of the normal receive is %d, expected MPI_SUCCESS",
                           sts[0].MPI_ERROR);
            }
            if (small != 777)
                report(size, vn, "the normal receive next to the truncated one got %d, expected 777", small);
        } else {
            MPI_Message msg;
            MPI_CHECK(MPI_Mprobe(1, 1, MPI_COMM_WORLD, &msg, &st));
            if (mt_count_bytes(&st) != (int)len)
                report(size, vn, "MPI_Mprobe reported %d bytes, the message has %zu", mt_count_bytes(&st), len);
            rc = MPI_Mrecv(buf, (int)size, MPI_BYTE, &msg, &st);
            if (!is_truncate(rc))
                report(size, vn, "MPI_Mrecv returned %s, expected class MPI_ERR_TRUNCATE", mt_errstr(rc));
        }
        size_t bad_after = 0, first_bad = 0;
        for (size_t i = 0; i < guard; i++)
            if (buf[size + i] != CANARY) {
                if (!bad_after)
                    first_bad = i;
                bad_after++;
            }
        if (bad_after)
            report(size, vn,
                   "wrote past the end of the receive buffer: %zu of the %zu guard bytes overwritten, the first at "
                   "offset +%zu",
                   bad_after, guard, first_bad);
        for (int i = 0; i < PRE; i++)
            if (region[i] != CANARY) {
                report(size, vn, "wrote before the start of the receive buffer (offset -%d)", PRE - i);
                break;
            }
        free(region);
    }
    if (!follow_up(len, c) && mt_rank == 0)
        report(size, vn, "the normal exchange after the truncated receive failed (wrong count or data)");
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "truncation", 2);
    size_t sizes[4] = {8, 4096, 64 << 10, 4 << 20};
    if (mt_rank < 2)
        for (int s = 0; s < 4; s++)
            for (int v = 0; v < 4; v++)
                one_case(sizes[s], v);
    MPI_CHECK(MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (failures && mt_rank == 0)
        FAIL("%d problem(s) in %d truncated receives; first: %s", failures, cases, first_failure);
    if (failures) {
        /* rank 0 aborts the job; wait for it */
        MPI_Barrier(MPI_COMM_WORLD);
        return 1;
    }
    return mt_finish("%d truncated receives (8 B, 4 KiB, 64 KiB, 4 MiB buffers x Recv/Wait/Waitall/Mrecv) reported "
                     "MPI_ERR_TRUNCATE, guard canaries intact, communicator usable afterwards",
                     cases);
}

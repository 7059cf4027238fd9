/* Self-checking active-message tests: the paper's absolute-value and remote-search
 * workloads, AMs interleaved with MPI_Accumulate, attach/detach inside an epoch, bad input. */
#include "mpix_am.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

enum { KEY = 16, PER_RANK = 64, SEG = 4, NSEG = 3, BIG = 6000 };
static int rank, size;

/* out[i] = |in[i]|; counts processed elements in persistent[0]. */
static int absval(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot,
                  void *pers, int pc, MPI_Datatype pt)
{
    (void)it; (void)ot; (void)pc; (void)pt; (void)oc;
    const int *a = in;
    int *b = out, n = ic / (int)sizeof(int);
    for (int i = 0; i < n; i++) b[i] = abs(a[i]);
    ((int *)pers)[0] += n;
    return MPI_SUCCESS;
}

/* Searches the target's keys (persistent buffer) for one query key; output 1 if found. */
static int search(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot,
                  void *pers, int pc, MPI_Datatype pt)
{
    (void)ic; (void)it; (void)oc; (void)ot; (void)pt;
    int found = 0;
    for (int i = 0; i < pc / KEY; i++) found |= !memcmp((char *)pers + i * KEY, in, KEY);
    memcpy(out, &found, sizeof found);
    return MPI_SUCCESS;
}

/* Fills big segments; the output is discarded. */
static int touch(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot,
                 void *pers, int pc, MPI_Datatype pt)
{
    (void)in; (void)ic; (void)it; (void)ot; (void)pers; (void)pc; (void)pt;
    memset(out, 7, (size_t)oc);
    return MPI_SUCCESS;
}

static void key_of(int owner, int i, char *k)
{
    memset(k, 0, KEY);
    snprintf(k, KEY, "k%d-%d", owner, i * 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Am_op op_abs, op_search, op_touch;
    MPIX_Am_op_create(absval, &op_abs);
    MPIX_Am_op_create(search, &op_search);
    MPIX_Am_op_create(touch, &op_touch);

    /* window: [0] AM element count, [1] accumulate target, then the keys */
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(int) + PER_RANK * KEY, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    mem[0] = mem[1] = 0;
    for (int i = 0; i < PER_RANK; i++) key_of(rank, i, (char *)(mem + 2) + i * KEY);

    /* bad input: outside an epoch, unknown handler */
    int in[SEG * NSEG], out[SEG * NSEG];
    for (int i = 0; i < SEG * NSEG; i++) in[i] = (i % 2 ? -1 : 1) * (i + rank);
    int rc = MPIX_Am(in, SEG, MPI_INT, out, SEG, MPI_INT, NSEG, 0, 0, 1, MPI_INT, op_abs, win);
    CHECK(rc == MPI_ERR_RMA_SYNC, "AM outside an epoch returned %d", rc);

    /* absolute value in a fence epoch, interleaved with Accumulate on the same window */
    int target = (rank + 1) % size, one = 1;
    MPI_Win_fence(0, win);
    rc = MPIX_Am(in, SEG, MPI_INT, out, SEG, MPI_INT, NSEG, target, 0, 1, MPI_INT, 99, win);
    CHECK(rc == MPI_ERR_OP, "unknown handler returned %d", rc);
    rc = MPIX_Am(in, SEG, MPI_INT, out, SEG, MPI_INT, NSEG, target, 0, 1, MPI_INT, op_abs, win);
    CHECK(rc == MPI_SUCCESS, "MPIX_Am returned %d", rc);
    MPI_Accumulate(&one, 1, MPI_INT, target, sizeof(int), 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < SEG * NSEG; i++) CHECK(out[i] == abs(in[i]), "abs output %d", i);
    CHECK(mem[0] == SEG * NSEG && mem[1] == 1, "persistent %d accumulate %d", mem[0], mem[1]);
    /* the AM's update is visible to a later RMA read */
    int remote = -1;
    MPI_Get(&remote, 1, MPI_INT, target, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(remote == SEG * NSEG, "Get after AM saw %d", remote);

    /* attach/detach inside an epoch (paper Fig. 3): a segment over the system buffer
     * runs while a large enough buffer is attached and fails cleanly after detach */
    static char big_in[BIG], big_out[BIG], user_buf[2 * BIG + 64];
    MPIX_Am_win_buffer_attach(user_buf, sizeof user_buf, win);
    MPI_Win_fence(0, win);
    rc = MPIX_Am(big_in, BIG, MPI_BYTE, big_out, BIG, MPI_BYTE, 1, target, 0, 0, MPI_BYTE, op_touch, win);
    CHECK(rc == MPI_SUCCESS, "big AM returned %d", rc);
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_SUCCESS && big_out[BIG - 1] == 7, "big AM with buffer: rc %d", rc);
    MPIX_Am_win_buffer_detach(user_buf, win);
    MPI_Barrier(MPI_COMM_WORLD);
    big_out[0] = 0;
    MPIX_Am(big_in, BIG, MPI_BYTE, big_out, BIG, MPI_BYTE, 1, target, 0, 0, MPI_BYTE, op_touch, win);
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_ERR_BUFFER && big_out[0] == 0, "big AM without buffer: rc %d", rc);

    /* remote search under lock/flush/unlock: rank 0 queries every target */
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (rank == 0) {
        enum { Q = 40 };
        int found[Q], expect[Q];
        for (int t = 0; t < size; t++) {
            MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
            char q[Q][KEY];
            for (int i = 0; i < Q; i++) {
                /* local search of the same data */
                expect[i] = 0;
                for (int j = 0; j < PER_RANK; j++) {
                    char k[KEY];
                    key_of(t, j, k);
                    expect[i] |= !memcmp(k, q[i], KEY);
                }
                MPIX_Am(q[i], KEY, MPI_CHAR, &found[i], 1, MPI_INT, 1, t, 2 * sizeof(int),
                        PER_RANK * KEY, MPI_CHAR, op_search, win);
                if (i == Q / 2) MPI_Win_flush(t, win);
            }
            MPI_Win_unlock(t, win);
            for (int i = 0; i < Q; i++) CHECK(found[i] == expect[i], "search %d on %d: %d", i, t, found[i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (rank == 0) printf("mpix_am tests passed on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}

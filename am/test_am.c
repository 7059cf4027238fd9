/* Self-checking active-message tests: the paper's absolute-value and remote-search
 * workloads, AMs interleaved with MPI_Accumulate, attach/detach inside an epoch, bad input,
 * dynamic and shared windows; the MPIX_Amv tests in test_amv.c. */
#include "test_am.h"
#include <stdlib.h>
#include <unistd.h>

enum { SEG = 4, NSEG = 3, BIG = 6000, NMANY = 5000 };
int rank, size;

/* out[i] = |in[i]|; counts processed elements in persistent[0]. */
static int absval(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot,
                  void *pers, int pc, MPI_Datatype pt)
{
    (void)ot; (void)pc; (void)pt; (void)oc;
    const int *a = in;
    int *b = out, n = it == MPI_BYTE ? ic / (int)sizeof(int) : ic; /* a derived type arrives as bytes */
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

/* The paper's Fig. 3: inside an exclusive lock epoch, rank 1 detaches one of its
 * two buffers between the origin's flush and its next AMs; the AMs before see
 * both buffers, the ones after only the other. */
static void fig3(MPI_Win win, MPIX_Am_op op_touch)
{
    enum { SMALL = 4200, LARGE = 9000 }; /* segments of 8400 and 18000 B: b2 holds one, only b1 the other */
    static char b1[2 * LARGE + 64], b2[2 * SMALL + 64], in[LARGE], o1[LARGE], o2[SMALL];
    int rc;
    if (rank == 0) {
        MPI_Barrier(MPI_COMM_WORLD); /* buffers attached */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPIX_Am(in, LARGE, MPI_BYTE, o1, LARGE, MPI_BYTE, 1, 1, 0, 0, MPI_BYTE, op_touch, win);
        MPIX_Am(in, SMALL, MPI_BYTE, o2, SMALL, MPI_BYTE, 1, 1, 0, 0, MPI_BYTE, op_touch, win);
        rc = MPI_Win_flush(1, win);
        CHECK(rc == MPI_SUCCESS && o1[LARGE - 1] == 7 && o2[SMALL - 1] == 7, "Fig. 3 before detach: rc %d", rc);
        MPI_Barrier(MPI_COMM_WORLD); /* flush completed */
        MPI_Barrier(MPI_COMM_WORLD); /* b1 detached */
        memset(o1, 0, sizeof o1);
        memset(o2, 0, sizeof o2);
        rc = MPIX_Am(in, LARGE, MPI_BYTE, o1, LARGE, MPI_BYTE, 1, 1, 0, 0, MPI_BYTE, op_touch, win);
        CHECK(rc == MPI_ERR_BUFFER, "Fig. 3: AM larger than the buffer left: rc %d", rc);
        MPIX_Am(in, SMALL, MPI_BYTE, o2, SMALL, MPI_BYTE, 1, 1, 0, 0, MPI_BYTE, op_touch, win);
        rc = MPI_Win_unlock(1, win);
        CHECK(rc == MPI_SUCCESS && o1[0] == 0 && o2[SMALL - 1] == 7, "Fig. 3 after detach: rc %d", rc);
    } else if (rank == 1) {
        MPIX_Am_win_buffer_attach(b1, sizeof b1, win);
        MPIX_Am_win_buffer_attach(b2, sizeof b2, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPIX_Am_win_buffer_detach(b1, win);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) MPIX_Am_win_buffer_detach(b2, win);
}

/* More AMs in one epoch than fit the batches in flight (flow control), each checked. */
static void many(MPI_Win win, MPIX_Am_op op_abs)
{
    static int in[NMANY][4], out[NMANY][4];
    int *mem, flag, target = (rank + 1) % size;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &mem, &flag);
    for (int i = 0; i < NMANY; i++)
        for (int j = 0; j < 4; j++) { in[i][j] = (j % 2 ? i : -i) - j; out[i][j] = -1; }
    MPI_Barrier(MPI_COMM_WORLD);
    int before = mem[0];
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < NMANY; i++) {
        int rc = MPIX_Am(in[i], 4, MPI_INT, out[i], 4, MPI_INT, 1, target, 0, 1, MPI_INT, op_abs, win);
        CHECK(rc == MPI_SUCCESS, "AM %d of %d returned %d", i, NMANY, rc);
    }
    int rc = MPI_Win_unlock_all(win);
    CHECK(rc == MPI_SUCCESS, "unlock_all after %d AMs returned %d", NMANY, rc);
    for (int i = 0; i < NMANY; i++)
        for (int j = 0; j < 4; j++) CHECK(out[i][j] == abs(in[i][j]), "AM %d output %d: %d", i, j, out[i][j]);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[0] - before == 4 * NMANY, "target ran %d elements, expected %d", mem[0] - before, 4 * NMANY);
}

/* A target blocked in MPI_Recv serves AMs: rank 0's AM completes before rank 0
 * sends what rank 1 waits for. Without service from Open MPI's progress this hangs
 * (the test command's timeout ends it). */
static void progress(MPI_Win win, MPIX_Am_op op_abs)
{
    if (getenv("MPIX_AM_NO_PROGRESS_HOOK")) {
        if (rank == 0) printf("MPIX_AM_NO_PROGRESS_HOOK: a target in MPI_Recv serves nothing; not tested\n");
        return;
    }
    int *mem, flag, x = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &mem, &flag);
    MPI_Barrier(MPI_COMM_WORLD);
    int before = mem[0];
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int in[2] = { -3, 4 }, out[2] = { 0, 0 };
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, 1, 0, 1, MPI_INT, op_abs, win);
        int rc = MPI_Win_unlock(1, win);
        CHECK(rc == MPI_SUCCESS && out[0] == 3 && out[1] == 4, "AM to a target in MPI_Recv: rc %d", rc);
        MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(mem[0] - before == 2, "the AM ran %d elements while the target was in MPI_Recv", mem[0] - before);
    }
}

/* Buffer reservation counted in round trips (MPIX_Am_win_get_sync): base (shared
 * lock), the exclusive lock's one reservation per epoch (resynchronised at a
 * flush unless am_buf_interleave_am_detach = false), and the am_user_buf_<rank>
 * hint (none). 16 AMs of 4000 staging bytes exceed the 8 KiB system buffer and fit
 * the 64 KiB user buffer. */
static long trips(MPI_Win w)
{
    double s;
    long n;
    MPIX_Am_win_get_sync(w, &s, &n);
    return n;
}

static void sixteen(MPI_Win w, MPIX_Am_op op, int t, char *in, char *out)
{
    for (int i = 0; i < 16; i++) {
        int rc = MPIX_Am(in, 2000, MPI_BYTE, out + i * 2000, 2000, MPI_BYTE, 1, t, 0, 0, MPI_BYTE, op, w);
        CHECK(rc == MPI_SUCCESS, "reservation test AM %d: rc %d", i, rc);
    }
}

static MPI_Win hinted(int *mem, const char *key, const char *value)
{
    MPI_Info info;
    MPI_Win w;
    MPI_Info_create(&info);
    MPI_Info_set(info, key, value);
    MPI_Win_create(mem, 64, 1, info, MPI_COMM_WORLD, &w);
    MPI_Info_free(&info);
    return w;
}

static void reservations(int *mem, MPIX_Am_op op_touch)
{
    static char b1[65536], b2[65536], b3[65536], in[2000], out[16 * 2000];
    int t = (rank + 1) % size;
    char key[32], val[32];
    snprintf(key, sizeof key, "am_user_buf_%d", t); /* what this origin is guaranteed at t */
    snprintf(val, sizeof val, "%d", (int)sizeof b2);
    MPI_Win wb = hinted(mem, "unused_key", "1"), wh = hinted(mem, key, val),
            wi = hinted(mem, "am_buf_interleave_am_detach", "false");
    MPIX_Am_win_buffer_attach(b1, sizeof b1, wb);
    MPIX_Am_win_buffer_attach(b2, sizeof b2, wh);
    MPIX_Am_win_buffer_attach(b3, sizeof b3, wi);
    MPI_Barrier(MPI_COMM_WORLD);

    long n0 = trips(wb);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, wb);
    sixteen(wb, op_touch, t, in, out);
    MPI_Win_unlock(t, wb);
    CHECK(trips(wb) > n0 && out[15 * 2000 + 1999] == 7, "base: %ld round trips", trips(wb) - n0);

    n0 = trips(wb);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, wb);
    sixteen(wb, op_touch, t, in, out);
    MPI_Win_flush(t, wb);
    CHECK(trips(wb) - n0 == 1, "exclusive lock: %ld round trips before the flush, expected 1", trips(wb) - n0);
    sixteen(wb, op_touch, t, in, out);
    MPI_Win_unlock(t, wb);
    CHECK(trips(wb) - n0 == 2, "exclusive lock: %ld round trips, expected 2 (resynchronised at the flush)",
          trips(wb) - n0);

    n0 = trips(wh);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, wh);
    sixteen(wh, op_touch, t, in, out);
    MPI_Win_unlock(t, wh);
    CHECK(trips(wh) == n0, "am_user_buf hint: %ld round trips, expected none", trips(wh) - n0);

    n0 = trips(wi);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, wi);
    sixteen(wi, op_touch, t, in, out);
    MPI_Win_flush(t, wi);
    sixteen(wi, op_touch, t, in, out);
    MPI_Win_unlock(t, wi);
    CHECK(trips(wi) - n0 == 1, "am_buf_interleave_am_detach=false: %ld round trips, expected 1", trips(wi) - n0);

    MPI_Barrier(MPI_COMM_WORLD);
    MPIX_Am_win_buffer_detach(b1, wb);
    MPIX_Am_win_buffer_detach(b2, wh);
    MPIX_Am_win_buffer_detach(b3, wi);
    MPI_Win_free(&wb);
    MPI_Win_free(&wh);
    MPI_Win_free(&wi);
}

/* Responses held at their target: rank 0 fills the 16 batches it may have in
 * flight (48 AMs of 2000 B in and out, room by the am_user_buf hint), then
 * sleeps (no MPI call) while rank 1 serves them. Where answers go by rendezvous
 * (the suite of UCX rendezvous messages; ob1 over CMA), they are read from rank
 * 1's buffers when rank 0 wakes: none may be reused before its send completes. */
static void held_responses(int *mem, MPIX_Am_op op_abs)
{
    enum { N = 48, K = 500 };
    static char user[1 << 18];
    static int in[N][K], out[N][K];
    MPI_Win w = hinted(mem, "am_user_buf_1", "262144");
    if (rank == 1) MPIX_Am_win_buffer_attach(user, sizeof user, w);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < K; j++) in[i][j] = -(i * K + j);
            int rc = MPIX_Am(in[i], K, MPI_INT, out[i], K, MPI_INT, 1, 1, 0, 1, MPI_INT, op_abs, w);
            CHECK(rc == MPI_SUCCESS, "held responses: AM %d returned %d", i, rc);
        }
        usleep(50000);
        MPI_Win_unlock(1, w);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < K; j++)
                CHECK(out[i][j] == i * K + j, "held responses: AM %d out[%d] = %d", i, j, out[i][j]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) MPIX_Am_win_buffer_detach(user, w);
    MPI_Win_free(&w);
}

/* Shared epochs share the target's user buffers (the paper's base): origin 1
 * fills rank 0's 64 KiB with segments of 9000 B, then waits in a barrier before
 * its unlock; origin 2's one segment of 10000 B needs 1808 B of them before that
 * barrier. A reservation is the AMs' it was made for and goes back when they
 * have run: kept until origin 1's unlock, it hung here. */
static void shared_space(int *mem, MPIX_Am_op op_touch)
{
    static char ub[65536], out[16 * 9000];
    MPI_Win w;
    MPI_Win_create(mem, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (rank == 0) MPIX_Am_win_buffer_attach(ub, sizeof ub, w);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 || rank == 2) {
        const int seg = rank == 1 ? 9000 : 10000, nseg = rank == 1 ? 16 : 1;
        if (rank == 2) MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memset(out, 0, sizeof out);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w);
        int rc = MPIX_Am(NULL, 0, MPI_BYTE, out, seg, MPI_BYTE, nseg, 0, 0, 0, MPI_BYTE, op_touch, w);
        CHECK(rc == MPI_SUCCESS, "shared user buffers: MPIX_Am returned %d", rc);
        if (rank == 1) MPI_Send(NULL, 0, MPI_BYTE, 2, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_unlock(0, w);
        CHECK(out[0] == 7 && out[seg * nseg - 1] == 7, "shared user buffers: output not written");
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPIX_Am_win_buffer_detach(ub, w);
    MPI_Win_free(&w);
}

/* One AM of two ints to target at disp (absval adds 2 at the persistent location). */
static int am2(MPI_Win win, MPIX_Am_op op_abs, int target, MPI_Aint disp, int pcount)
{
    static int in[2] = { -1, 2 }, out[2];
    return MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, target, disp, pcount, MPI_INT, op_abs, win);
}

/* PSCW, rank 0 the origin and rank 1 the target polling MPI_Win_test: the AM
 * completes (with MPIX_AM_NO_PROGRESS_HOOK only MPI_Win_test serves it there). */
static void pscw_test(MPI_Win win, MPIX_Am_op op_abs)
{
    int *mem, flag = 0, peer = 1 - rank;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &mem, &flag);
    MPI_Group world, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Barrier(MPI_COMM_WORLD);
    int before = mem[0], in[2] = { 7, -8 }, out[2] = { 0, 0 };
    if (rank < 2) MPI_Group_incl(world, 1, &peer, &group);
    if (rank == 0) {
        MPI_Win_start(group, 0, win);
        int rc = MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, 1, 0, 1, MPI_INT, op_abs, win);
        if (rc == MPI_SUCCESS) rc = MPI_Win_complete(win);
        CHECK(rc == MPI_SUCCESS && out[0] == 7 && out[1] == 8, "PSCW AM: rc %d, output %d %d", rc, out[0], out[1]);
    } else if (rank == 1) {
        MPI_Win_post(group, 0, win);
        for (flag = 0; !flag;) MPI_Win_test(win, &flag);
        CHECK(mem[0] - before == 2, "PSCW with MPI_Win_test: the AM ran %d elements", mem[0] - before);
    }
    if (rank < 2) MPI_Group_free(&group);
    MPI_Group_free(&world);
}

/* MPI_Win_flush_local(_all) completes AMs locally: their output is in place, as
 * MPI_Get_accumulate's result is. */
static void flush_local(MPI_Win win, MPIX_Am_op op_abs)
{
    int target = (rank + 1) % size, in[2] = { -5, 6 }, out[2] = { 0, 0 }, all[2] = { 0, 0 };
    MPI_Win_lock_all(0, win);
    int rc = MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, target, 0, 1, MPI_INT, op_abs, win);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush_local(target, win);
    CHECK(rc == MPI_SUCCESS && out[0] == 5 && out[1] == 6, "after MPI_Win_flush_local: rc %d, output %d %d", rc,
          out[0], out[1]);
    rc = MPIX_Am(in, 2, MPI_INT, all, 2, MPI_INT, 1, target, 0, 1, MPI_INT, op_abs, win);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush_local_all(win);
    CHECK(rc == MPI_SUCCESS && all[0] == 5 && all[1] == 6, "after MPI_Win_flush_local_all: rc %d, output %d %d",
          rc, all[0], all[1]);
    MPI_Win_unlock_all(win);
}

/* A handler that fails: its error comes back from the completing call; the AM
 * after it in the same epoch runs and returns its output. */
static int fails(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, void *pers, int pc,
                 MPI_Datatype pt)
{
    (void)in; (void)ic; (void)it; (void)out; (void)oc; (void)ot; (void)pers; (void)pc; (void)pt;
    return MPI_ERR_OTHER;
}

static void handler_error(MPI_Win win, MPIX_Am_op op_abs, MPIX_Am_op op_fails)
{
    int target = (rank + 1) % size, in[2] = { -1, -2 }, out[2] = { 0, 0 }, next[2] = { 0, 0 };
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, target, 0, 1, MPI_INT, op_fails, win);
    MPIX_Am(in, 2, MPI_INT, next, 2, MPI_INT, 1, target, 0, 1, MPI_INT, op_abs, win);
    int rc = MPI_Win_unlock(target, win);
    CHECK(rc == MPI_ERR_OTHER && out[0] == 0 && next[0] == 1 && next[1] == 2,
          "a failing handler: unlock returned %d, outputs %d and %d %d", rc, out[0], next[0], next[1]);
}

/* MPI_PROC_NULL as a target, as MPI RMA takes it: an AM to it has no effect.
 * Locking and unlocking it are MPI's to judge (Open MPI 4.1's osc/rdma refuses
 * them with MPI_ERR_RANK; its MPI_Win_flush(MPI_PROC_NULL) crashes, so that is
 * not called); the library adds nothing to complete there (it read outside its
 * per-target arrays: MPICH's rmanull died of SIGSEGV with the library preloaded). */
static void proc_null(MPI_Win win, MPIX_Am_op op_abs)
{
    int in[2] = { -1, -2 }, out[2] = { 9, 9 }, class = MPI_SUCCESS;
    MPI_Win_lock_all(0, win);
    int rc = MPIX_Am(in, 2, MPI_INT, out, 2, MPI_INT, 1, MPI_PROC_NULL, 0, 1, MPI_INT, op_abs, win);
    CHECK(rc == MPI_SUCCESS, "an AM to MPI_PROC_NULL returned %d", rc);
    rc = MPI_Win_unlock_all(win);
    CHECK(rc == MPI_SUCCESS && out[0] == 9 && out[1] == 9, "after an AM to MPI_PROC_NULL: rc %d, output %d %d", rc,
          out[0], out[1]);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 1000; i++) {
        MPI_Error_class(MPI_Win_unlock(MPI_PROC_NULL, win), &class);
        CHECK(class == MPI_SUCCESS || class == MPI_ERR_RANK, "MPI_Win_unlock(MPI_PROC_NULL): class %d", class);
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
}

/* A target location outside the target's window is refused at the origin
 * (MPI_ERR_RMA_RANGE, nothing sent), as are segments of 2 GiB or more; the
 * epoch's other AMs complete, at the window's last int too. */
static void ranges(MPI_Win win, MPIX_Am_op op_abs)
{
    int *mem, flag, target = (rank + 1) % size;
    MPI_Aint *bytes;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &mem, &flag);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &bytes, &flag);
    const MPI_Aint last = *bytes - (MPI_Aint)sizeof(int); /* the window's displacement unit is 1 */
    int kept = *(int *)((char *)mem + last), big[2];
    MPI_Win_fence(0, win);
    int rc = am2(win, op_abs, target, last + 1, 1);
    CHECK(rc == MPI_ERR_RMA_RANGE, "AM across the window's end returned %d", rc);
    rc = am2(win, op_abs, target, -4, 1);
    CHECK(rc == MPI_ERR_RMA_RANGE, "AM at a negative displacement returned %d", rc);
    rc = am2(win, op_abs, target, 0, (int)(*bytes / (MPI_Aint)sizeof(int)) + 1);
    CHECK(rc == MPI_ERR_RMA_RANGE, "AM with more persistent data than the window returned %d", rc);
    rc = MPIX_Am(big, 1 << 29, MPI_INT, big, 2, MPI_INT, 1, target, 0, 1, MPI_INT, op_abs, win);
    CHECK(rc == MPI_ERR_COUNT, "AM with a 2 GiB input segment returned %d", rc);
    /* the persistent type the output's, not the input's: two ints from the last one reach past the end */
    rc = MPIX_Am(big, 8, MPI_BYTE, big, 2, MPI_INT, 1, target, last, 2, MPI_INT, op_abs, win);
    CHECK(rc == MPI_ERR_RMA_RANGE, "AM of two persistent ints from the window's last returned %d", rc);
    rc = am2(win, op_abs, target, last, 1);
    CHECK(rc == MPI_SUCCESS, "AM at the window's last int returned %d", rc);
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_SUCCESS, "fence after refused AMs returned %d", rc);
    int now = *(int *)((char *)mem + last);
    CHECK(now == kept + 2, "the window's last int is %d, expected %d", now, kept + 2);
}

/* Dynamic windows: displacements are addresses in attached memory, which only
 * the target knows: an AM to memory not attached there is refused by the target
 * (the origin's unlock returns MPI_ERR_RMA_RANGE) and its handler does not run. */
static void dynamic(MPIX_Am_op op_abs)
{
    static int region[8]; /* the first 4 attached */
    MPI_Win win;
    int rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(rc == MPI_SUCCESS, "MPI_Win_create_dynamic returned %d", rc);
    MPI_Win_attach(win, region, 4 * sizeof(int));
    MPI_Aint mine, *addr = malloc(sizeof(MPI_Aint) * (size_t)size);
    MPI_Get_address(region, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    int target = (rank + 1) % size;
    MPI_Win_lock_all(0, win);
    rc = am2(win, op_abs, target, addr[target] + 3 * (MPI_Aint)sizeof(int), 1);
    CHECK(rc == MPI_SUCCESS, "AM to attached memory returned %d", rc);
    rc = MPI_Win_unlock_all(win);
    CHECK(rc == MPI_SUCCESS, "unlock_all after an AM to attached memory returned %d", rc);
    MPI_Win_lock_all(0, win);
    am2(win, op_abs, target, addr[target] + 3 * (MPI_Aint)sizeof(int), 2); /* one int past the region */
    am2(win, op_abs, target, addr[target], 1);
    rc = MPI_Win_unlock_all(win);
    CHECK(rc == MPI_ERR_RMA_RANGE, "unlock_all after an AM past the attached memory returned %d", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++)
        CHECK(region[i] == (i == 0 || i == 3 ? 2 : 0), "dynamic window: region[%d] = %d", i, region[i]);
    MPI_Win_detach(win, region);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    am2(win, op_abs, target, addr[target], 1);
    rc = MPI_Win_unlock_all(win);
    CHECK(rc == MPI_ERR_RMA_RANGE, "unlock_all after an AM to detached memory returned %d", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(region[0] == 2, "dynamic window: an AM ran on detached memory (%d)", region[0]);
    MPI_Win_free(&win);
    free(addr);
}

/* Shared windows (the ranks of one node): AMs as to any window, checked by loads. */
static void shared(MPIX_Am_op op_abs)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nrank, nsize, *mem;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    MPI_Win win;
    int rc = MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mem, &win);
    CHECK(rc == MPI_SUCCESS, "MPI_Win_allocate_shared returned %d", rc);
    memset(mem, 0, 4 * sizeof(int));
    MPI_Win_fence(0, win);
    rc = am2(win, op_abs, (nrank + 1) % nsize, 4, 1);
    CHECK(rc == MPI_ERR_RMA_RANGE, "AM past a shared window returned %d", rc);
    rc = am2(win, op_abs, (nrank + 1) % nsize, 1, 1);
    CHECK(rc == MPI_SUCCESS, "AM to a shared window returned %d", rc);
    MPI_Win_fence(0, win);
    CHECK(mem[0] == 0 && mem[1] == 2 && mem[2] == 0, "shared window: %d %d %d", mem[0], mem[1], mem[2]);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Am_op op_abs, op_search, op_touch, op_fails;
    MPIX_Am_op_create(absval, &op_abs);
    if (size < 2) {
        if (rank == 0) printf("mpix_am_test needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    MPIX_Am_op_create(search, &op_search);
    MPIX_Am_op_create(touch, &op_touch);
    MPIX_Am_op_create(fails, &op_fails); /* before any AM can reach this process: in the same order everywhere */

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
    rc = MPIX_Am(big_in, BIG, MPI_BYTE, big_out, BIG, MPI_BYTE, 1, target, 0, 0, MPI_BYTE, op_touch, win);
    CHECK(rc == MPI_ERR_BUFFER, "big AM without buffer: rc %d", rc); /* the reservation found no space */
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_SUCCESS && big_out[0] == 0, "fence after a refused AM: rc %d", rc);

    /* a derived input and output type: packed at the origin, bytes at the target */
    MPI_Datatype strided;
    MPI_Type_vector(4, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int sin[8], sout[8];
    for (int i = 0; i < 8; i++) { sin[i] = -(i + 1); sout[i] = 99; }
    MPIX_Am(sin, 1, strided, sout, 1, strided, 1, target, 0, 0, MPI_INT, op_abs, win);
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_SUCCESS, "derived-type AM returned %d", rc);
    for (int i = 0; i < 8; i++) CHECK(sout[i] == (i % 2 ? 99 : i + 1), "derived-type AM out[%d] = %d", i, sout[i]);
    /* a derived type's AM goes whole: 2000 segments of 32 B staged fit no buffer there,
     * though one segment does (the test command checks that the error line says so) */
    enum { DSEG = 2000 };
    static int dbig[DSEG * 8], dout[DSEG * 8];
    rc = MPIX_Am(dbig, 1, strided, dout, 1, strided, DSEG, target, 0, 0, MPI_INT, op_abs, win);
    CHECK(rc == MPI_ERR_BUFFER, "derived-type AM larger than every buffer: rc %d", rc);
    rc = MPI_Win_fence(0, win);
    CHECK(rc == MPI_SUCCESS && dout[0] == 0, "fence after a refused derived-type AM: rc %d", rc);
    MPI_Type_free(&strided);

    /* remote search under lock/flush/unlock: rank 0 queries every target */
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (rank == 0) {
        enum { Q = 40 };
        int found[Q], expect[Q];
        for (int t = 0; t < size; t++) {
            MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
            char q[Q][KEY];
            for (int i = 0; i < Q; i++) {
                key_of(t, i * 2 + (i % 3 == 0), q[i]); /* some queries are keys of t, others not */
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
            int nfound = 0;
            for (int i = 0; i < Q; i++) {
                CHECK(found[i] == expect[i], "search %d on %d: %d", i, t, found[i]);
                nfound += found[i];
            }
            CHECK(nfound > 0 && nfound < Q, "search on %d: %d of %d found", t, nfound, Q);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    fig3(win, op_touch);
    many(win, op_abs);
    test_amv(mem, win, op_search, op_touch);
    progress(win, op_abs);
    reservations(mem, op_touch);
    held_responses(mem, op_abs);
    if (size >= 3) shared_space(mem, op_touch);
    handler_error(win, op_abs, op_fails);
    flush_local(win, op_abs);
    proc_null(win, op_abs);
    pscw_test(win, op_abs);
    ranges(win, op_abs);
    MPI_Win_free(&win);
    dynamic(op_abs);
    shared(op_abs);
    if (rank == 0) printf("mpix_am tests passed on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}

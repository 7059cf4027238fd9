/* Active messages over point-to-point on a private duplicate of the window's
 * communicator (matched by our engine under --mca pml ubermatch, works under any
 * PML).  Epoch calls are intercepted through the PMPI profiling interface so that
 * an unchanged MPI program's fence/unlock/flush completes its AMs; targets serve
 * AMs while inside those calls and inside MPI_Barrier / MPI_Win_free. */
#include "mpix_am.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

enum { TAG_REQ = 1, TAG_RESP = 2, MAX_OPS = 64, MAX_BUFS = 16 };
enum { SYSTEM_BUF_BYTES = 4096 }; /* per-origin system buffer */

typedef struct {
    int op, fence, pcount, nseg, in_bytes, out_bytes; /* per-segment bytes */
    MPI_Aint disp;
} am_hdr;

typedef struct am_pending {
    MPI_Request req[2];  /* send of request, receive of response */
    void *send, *resp, *out;
    int target, out_total;
    struct am_pending *next;
} am_pending;

typedef struct {
    MPI_Comm comm;
    int rank, size, fence_open, *locked, *issued, served_fence;
    char *base;
    int disp_unit;
    void *buf[MAX_BUFS];
    int buf_size[MAX_BUFS], nbuf;
    am_pending *pending;
    int error; /* first error reported back by a target */
} am_win;

static MPIX_AM_USER_FUNCTION *ops[MAX_OPS];
static int nops;
static int keyval = MPI_KEYVAL_INVALID;
static am_win *last_win; /* the window a barrier serves: the most recent one created */

static int fail(int code, const char *msg)
{
    fprintf(stderr, "mpix_am: %s\n", msg);
    return code;
}

int MPIX_Am_op_create(MPIX_AM_USER_FUNCTION *fn, MPIX_Am_op *op)
{
    if (!fn || !op) return fail(MPI_ERR_ARG, "MPIX_Am_op_create: null handler or op");
    if (nops == MAX_OPS) return fail(MPI_ERR_INTERN, "MPIX_Am_op_create: more than 64 handlers");
    ops[nops] = fn;
    *op = nops++;
    return MPI_SUCCESS;
}

static am_win *state(MPI_Win win)
{
    am_win *w = NULL;
    int flag = 0;
    if (keyval != MPI_KEYVAL_INVALID) PMPI_Win_get_attr(win, keyval, &w, &flag);
    return flag ? w : NULL;
}

static void setup(MPI_Win win, MPI_Comm comm)
{
    if (keyval == MPI_KEYVAL_INVALID)
        PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &keyval, NULL);
    am_win *w = calloc(1, sizeof *w);
    PMPI_Comm_dup(comm, &w->comm);
    PMPI_Comm_rank(comm, &w->rank);
    PMPI_Comm_size(comm, &w->size);
    w->locked = calloc((size_t)w->size, sizeof(int));
    w->issued = calloc((size_t)w->size, sizeof(int));
    void *base; int *du; int flag;
    PMPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    w->base = base;
    PMPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag);
    w->disp_unit = *du;
    PMPI_Win_set_attr(win, keyval, w);
    last_win = w;
}

int MPI_Win_create(void *base, MPI_Aint size, int du, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    int rc = PMPI_Win_create(base, size, du, info, comm, win);
    if (rc == MPI_SUCCESS) setup(*win, comm);
    return rc;
}

int MPI_Win_allocate(MPI_Aint size, int du, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win)
{
    int rc = PMPI_Win_allocate(size, du, info, comm, base, win);
    if (rc == MPI_SUCCESS) setup(*win, comm);
    return rc;
}

/* Largest staging buffer a segment of `bytes` may use at this target. */
static int fits(const am_win *w, int bytes)
{
    if (bytes <= SYSTEM_BUF_BYTES) return 1;
    for (int i = 0; i < w->nbuf; i++)
        if (w->buf[i] && w->buf_size[i] >= bytes) return 1;
    return 0;
}

/* Serve one AM if one has arrived; returns 1 if it did. */
static int serve_one(am_win *w)
{
    int flag, bytes;
    MPI_Status st;
    PMPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, w->comm, &flag, &st);
    if (!flag) return 0;
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    char *msg = malloc((size_t)bytes);
    PMPI_Recv(msg, bytes, MPI_BYTE, st.MPI_SOURCE, TAG_REQ, w->comm, MPI_STATUS_IGNORE);
    am_hdr h;
    memcpy(&h, msg, sizeof h);
    size_t out_total = (size_t)h.out_bytes * (size_t)h.nseg;
    char *resp = calloc(1, sizeof(int) + out_total);
    int err = MPI_SUCCESS;
    if (h.op < 0 || h.op >= nops) err = MPI_ERR_OP;
    else if (!fits(w, h.in_bytes + h.out_bytes)) err = MPI_ERR_BUFFER;
    for (int s = 0; err == MPI_SUCCESS && s < h.nseg; s++) {
        const char *in = msg + sizeof h + (size_t)s * (size_t)h.in_bytes;
        char *out = resp + sizeof(int) + (size_t)s * (size_t)h.out_bytes;
        err = ops[h.op](in, h.in_bytes, MPI_BYTE, out, h.out_bytes, MPI_BYTE,
                        w->base + h.disp * w->disp_unit, h.pcount, MPI_BYTE);
    }
    memcpy(resp, &err, sizeof err);
    PMPI_Send(resp, (int)(sizeof(int) + out_total), MPI_BYTE, st.MPI_SOURCE, TAG_RESP, w->comm);
    free(resp);
    free(msg);
    if (h.fence) w->served_fence++;
    return 1;
}

/* Complete the origin's AMs to `target` (all targets if MPI_ANY_SOURCE), serving meanwhile. */
static int complete(am_win *w, int target)
{
    am_pending **p = &w->pending;
    while (*p) {
        am_pending *a = *p;
        if (target != MPI_ANY_SOURCE && a->target != target) { p = &a->next; continue; }
        int done = 0;
        while (!done) {
            PMPI_Testall(2, a->req, &done, MPI_STATUSES_IGNORE);
            if (!done) serve_one(w);
        }
        int err;
        memcpy(&err, a->resp, sizeof err);
        if (err == MPI_SUCCESS) memcpy(a->out, (char *)a->resp + sizeof err, (size_t)a->out_total);
        else if (w->error == MPI_SUCCESS) w->error = err;
        *p = a->next;
        free(a->send); free(a->resp); free(a);
    }
    int e = w->error;
    w->error = MPI_SUCCESS;
    if (e == MPI_ERR_OP) return fail(e, "an AM named an unknown handler (register with MPIX_Am_op_create)");
    if (e == MPI_ERR_BUFFER)
        return fail(e, "an AM segment was larger than the target's system buffer and every attached buffer "
                       "(attach one with MPIX_Am_win_buffer_attach)");
    return e;
}

int MPIX_Am(const void *in, int in_count, MPI_Datatype in_type, void *out, int out_count,
            MPI_Datatype out_type, int nseg, int target, MPI_Aint disp, int pcount,
            MPI_Datatype ptype, MPIX_Am_op op, MPI_Win win)
{
    am_win *w = state(win);
    if (!w) return fail(MPI_ERR_WIN, "MPIX_Am: window not created with MPI_Win_create or MPI_Win_allocate");
    if (target < 0 || target >= w->size) return fail(MPI_ERR_RANK, "MPIX_Am: target rank out of range");
    if (op < 0 || op >= nops) return fail(MPI_ERR_OP, "MPIX_Am: unknown handler (register with MPIX_Am_op_create)");
    if (nseg < 1 || in_count < 0 || out_count < 0 || pcount < 0)
        return fail(MPI_ERR_COUNT, "MPIX_Am: num_segments must be >= 1 and counts >= 0");
    if (!w->fence_open && !w->locked[target])
        return fail(MPI_ERR_RMA_SYNC, "MPIX_Am: outside an epoch (open one with MPI_Win_fence, "
                                      "MPI_Win_lock or MPI_Win_lock_all)");
    int isz, osz, psz;
    PMPI_Type_size(in_type, &isz);
    PMPI_Type_size(out_type, &osz);
    PMPI_Type_size(ptype, &psz);
    am_hdr h = { op, !w->locked[target], pcount * psz, nseg, in_count * isz, out_count * osz, disp };
    size_t in_total = (size_t)h.in_bytes * (size_t)nseg;
    am_pending *a = calloc(1, sizeof *a);
    a->send = malloc(sizeof h + in_total);
    memcpy(a->send, &h, sizeof h);
    memcpy((char *)a->send + sizeof h, in, in_total);
    a->out_total = h.out_bytes * nseg;
    a->resp = malloc(sizeof(int) + (size_t)a->out_total);
    a->out = out;
    a->target = target;
    PMPI_Irecv(a->resp, (int)sizeof(int) + a->out_total, MPI_BYTE, target, TAG_RESP, w->comm, &a->req[1]);
    PMPI_Isend(a->send, (int)(sizeof h + in_total), MPI_BYTE, target, TAG_REQ, w->comm, &a->req[0]);
    a->next = w->pending;
    w->pending = a;
    if (h.fence) w->issued[target]++;
    return MPI_SUCCESS;
}

int MPIX_Am_win_buffer_attach(void *buffer, int size, MPI_Win win)
{
    am_win *w = state(win);
    if (!w) return fail(MPI_ERR_WIN, "MPIX_Am_win_buffer_attach: window unknown to mpix_am");
    if (!buffer || size <= 0) return fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: null buffer or size <= 0");
    for (int i = 0; i < MAX_BUFS; i++)
        if (!w->buf[i]) {
            w->buf[i] = buffer;
            w->buf_size[i] = size;
            if (i >= w->nbuf) w->nbuf = i + 1;
            return MPI_SUCCESS;
        }
    return fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: more than 16 buffers attached");
}

/* AMs are served one at a time to completion, so no AM holds the buffer here. */
int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win)
{
    am_win *w = state(win);
    if (!w) return fail(MPI_ERR_WIN, "MPIX_Am_win_buffer_detach: window unknown to mpix_am");
    for (int i = 0; i < w->nbuf; i++)
        if (w->buf[i] == buffer) { w->buf[i] = NULL; return MPI_SUCCESS; }
    return fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_detach: buffer is not attached to this window");
}

/* Fence: learn how many fence-epoch AMs target me, serve them, complete mine. */
int MPI_Win_fence(int assert, MPI_Win win)
{
    am_win *w = state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        int expected = 0;
        PMPI_Reduce_scatter_block(w->issued, &expected, 1, MPI_INT, MPI_SUM, w->comm);
        rc = complete(w, MPI_ANY_SOURCE);
        while (w->served_fence < expected) serve_one(w);
        w->served_fence -= expected;
        memset(w->issued, 0, sizeof(int) * (size_t)w->size);
        w->fence_open = !(assert & MPI_MODE_NOSUCCEED);
    }
    int rc2 = PMPI_Win_fence(assert, win);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int MPI_Win_lock(int type, int rank, int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock(type, rank, assert, win);
    am_win *w = state(win);
    if (w && rc == MPI_SUCCESS && rank >= 0 && rank < w->size) w->locked[rank] = 1;
    return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock_all(assert, win);
    am_win *w = state(win);
    if (w && rc == MPI_SUCCESS)
        for (int i = 0; i < w->size; i++) w->locked[i] = 1;
    return rc;
}

int MPI_Win_flush(int rank, MPI_Win win)
{
    am_win *w = state(win);
    int rc = w ? complete(w, rank) : MPI_SUCCESS;
    int rc2 = PMPI_Win_flush(rank, win);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int MPI_Win_flush_all(MPI_Win win)
{
    am_win *w = state(win);
    int rc = w ? complete(w, MPI_ANY_SOURCE) : MPI_SUCCESS;
    int rc2 = PMPI_Win_flush_all(win);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    am_win *w = state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        rc = complete(w, rank);
        if (rank >= 0 && rank < w->size) w->locked[rank] = 0;
    }
    int rc2 = PMPI_Win_unlock(rank, win);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int MPI_Win_unlock_all(MPI_Win win)
{
    am_win *w = state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        rc = complete(w, MPI_ANY_SOURCE);
        memset(w->locked, 0, sizeof(int) * (size_t)w->size);
    }
    int rc2 = PMPI_Win_unlock_all(win);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Passive targets serve AMs while they wait in a barrier. */
static int barrier_serving(am_win *w, MPI_Comm comm)
{
    MPI_Request r;
    int done = 0, rc = PMPI_Ibarrier(comm, &r);
    while (rc == MPI_SUCCESS && !done) {
        rc = PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done) serve_one(w);
    }
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    return last_win ? barrier_serving(last_win, comm) : PMPI_Barrier(comm);
}

int MPI_Win_free(MPI_Win *win)
{
    am_win *w = state(*win);
    if (w) {
        complete(w, MPI_ANY_SOURCE);
        barrier_serving(w, w->comm);
        if (last_win == w) last_win = NULL;
        PMPI_Comm_free(&w->comm);
        free(w->locked); free(w->issued); free(w);
    }
    return PMPI_Win_free(win);
}

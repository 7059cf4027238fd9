/* Epochs through the PMPI profiling interface, so an unchanged MPI program's
 * synchronization completes its AMs (wrappers named MPIX_* would make every epoch
 * call site change): window creation and free, fence, lock/unlock(_all),
 * flush(_all), PSCW, and MPI_Barrier (a passive target serves while it waits). */
#include "am_internal.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

static int keyval = MPI_KEYVAL_INVALID;

/* The last window found, per thread: through Open MPI's attribute hash every
 * call paid ~7% of an origin's time issuing small AMs. Freeing a window bumps
 * win_gen, so no thread trusts what it found before. */
static unsigned long win_gen;
static __thread struct { MPI_Win win; am_win *w; unsigned long gen; } found
    __attribute__((tls_model("initial-exec")));

am_win *am_state(MPI_Win win)
{
    const unsigned long gen = __atomic_load_n(&win_gen, __ATOMIC_ACQUIRE);
    if (found.w && found.win == win && found.gen == gen) return found.w;
    am_win *w = NULL;
    int flag = 0;
    if (keyval != MPI_KEYVAL_INVALID && win != MPI_WIN_NULL) PMPI_Win_get_attr(win, keyval, &w, &flag);
    if (!flag) return NULL;
    found.win = win;
    found.w = w;
    found.gen = gen;
    return w;
}

int am_unknown_window(const char *fn)
{
    char msg[320];
    snprintf(msg, sizeof msg, "%s: not a window of this program's (made by MPI_Win_create, MPI_Win_allocate, "
             "MPI_Win_allocate_shared or MPI_Win_create_dynamic, and not freed)", fn);
    return am_fail(MPI_ERR_WIN, msg);
}

/* The first of two calls' errors (the library's, then MPI's). */
static int first_error(int rc, int rc2)
{
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Reads the window's info key am_pack_threshold (default 0.8, as in the paper). */
static int pack_threshold(MPI_Info info, float *out)
{
    *out = 0.8f;
    if (info == MPI_INFO_NULL) return MPI_SUCCESS;
    char v[64];
    int flag = 0;
    PMPI_Info_get(info, "am_pack_threshold", (int)sizeof v - 1, v, &flag);
    if (!flag) return MPI_SUCCESS;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || d < 0.0 || d > 1.0) {
        fprintf(stderr, "mpix_am: am_pack_threshold = \"%s\" is invalid; valid values are 0.0 .. 1.0\n", v);
        return MPI_ERR_INFO_VALUE;
    }
    *out = (float)d;
    return MPI_SUCCESS;
}

/* The paper's window hints: am_user_buf_<rank> (bytes of rank's user buffers
 * guaranteed to this origin: no handshake for them) and am_buf_interleave_am_detach
 * (false: no detach between an exclusive lock's flushes, so the reservation stays). */
static void hints(am_win *w, MPI_Info info)
{
    w->interleave_detach = 1;
    if (info == MPI_INFO_NULL) return;
    char key[64], v[64];
    int flag;
    for (int r = 0; r < w->size; r++) {
        snprintf(key, sizeof key, "am_user_buf_%d", r);
        PMPI_Info_get(info, key, (int)sizeof v - 1, v, &flag);
        if (flag) w->hint[r] = atoll(v) > 0 ? atoll(v) : 0;
    }
    PMPI_Info_get(info, "am_buf_interleave_am_detach", (int)sizeof v - 1, v, &flag);
    if (flag && !strcmp(v, "false")) w->interleave_detach = 0;
}

static void setup(MPI_Win win, MPI_Comm comm, float threshold, MPI_Info info)
{
    am_threads_init();
    am_enter();
    if (keyval == MPI_KEYVAL_INVALID)
        PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &keyval, NULL);
    am_leave();
    am_win *w = calloc(1, sizeof *w);
    if (!w) abort();
    am_win_locks_init(w);
    PMPI_Comm_dup(comm, &w->comm);
    PMPI_Comm_group(w->comm, &w->group);
    PMPI_Comm_rank(comm, &w->rank);
    PMPI_Comm_size(comm, &w->size);
    size_t n = (size_t)w->size;
    w->access = calloc(n, sizeof(int));
    w->issued = calloc(n, sizeof(int));
    w->inflight = calloc(n, sizeof(int));
    w->open = calloc(n, sizeof(am_batch *));
    w->head = calloc(n, sizeof(am_batch *));
    w->tail = calloc(n, sizeof(am_batch *));
    w->granted = calloc(n, sizeof(long long));
    w->staged = calloc(n, sizeof(long long));
    w->hint = calloc(n, sizeof(long long));
    w->excl = calloc(n, sizeof(int));
    w->holds_all = calloc(n, sizeof(int));
    if (!w->access || !w->issued || !w->inflight || !w->open || !w->head || !w->tail || !w->granted || !w->staged ||
        !w->hint || !w->excl || !w->holds_all)
        abort();
    hints(w, info);
    void *base;
    int *du, flag;
    PMPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    w->base = base;
    PMPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag);
    w->disp_unit = *du;
    w->pack_threshold = threshold;
    am_range_setup(w, win);
    PMPI_Win_set_attr(win, keyval, w);
    am_progress_attach(w);
}

/* After a window is made: it becomes an AM window.  The window comes by
 * address: read after the call that made it. */
static int made(int rc, const MPI_Win *win, MPI_Comm comm, float threshold, MPI_Info info)
{
    if (rc == MPI_SUCCESS) setup(*win, comm, threshold, info);
    return rc;
}

int MPI_Win_create(void *base, MPI_Aint size, int du, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    float th;
    int rc = pack_threshold(info, &th);
    return rc != MPI_SUCCESS ? rc : made(PMPI_Win_create(base, size, du, info, comm, win), win, comm, th, info);
}

int MPI_Win_allocate(MPI_Aint size, int du, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win)
{
    float th;
    int rc = pack_threshold(info, &th);
    return rc != MPI_SUCCESS ? rc : made(PMPI_Win_allocate(size, du, info, comm, base, win), win, comm, th, info);
}

int MPI_Win_allocate_shared(MPI_Aint size, int du, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win)
{
    float th;
    int rc = pack_threshold(info, &th);
    return rc != MPI_SUCCESS ? rc
                             : made(PMPI_Win_allocate_shared(size, du, info, comm, base, win), win, comm, th, info);
}

/* Its AMs' target displacements are addresses in memory attached with
 * MPI_Win_attach (am_range.c), as for MPI_Put to it. */
int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    float th;
    int rc = pack_threshold(info, &th);
    return rc != MPI_SUCCESS ? rc : made(PMPI_Win_create_dynamic(info, comm, win), win, comm, th, info);
}

/* Completes the AMs to target (MPI_ANY_SOURCE: all) and returns or keeps the
 * buffer reservations: epoch_ends at unlock, fence and complete, not at flush.
 * w's calls held (am_win_enter). */
static int complete(am_win *w, int target, int epoch_ends)
{
    if (target != MPI_ANY_SOURCE && (target < 0 || target >= w->size))
        return MPI_SUCCESS; /* MPI_PROC_NULL (no AM goes there), or a bad rank MPI itself reports */
    int rc = am_complete(w, target);
    int lo = target == MPI_ANY_SOURCE ? 0 : target, hi = target == MPI_ANY_SOURCE ? w->size : target + 1;
    for (int t = lo; t < hi; t++) am_credit_sync(w, t, epoch_ends);
    return rc;
}

/* complete() as one call on w. */
static int complete_call(am_win *w, int target, int epoch_ends)
{
    am_win_enter(w);
    int rc = complete(w, target, epoch_ends);
    am_win_leave(w);
    return rc;
}

/* Fence: complete mine, learn how many fence-epoch batches target me, serve them. */
int MPI_Win_fence(int assert, MPI_Win win)
{
    am_win *w = am_state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        am_win_enter(w);
        /* my AMs complete (and my reservations go back) before the collective, so an
         * origin still waiting for buffer space somewhere is not blocked by me */
        rc = complete(w, MPI_ANY_SOURCE, 1);
        int expected = 0;
        MPI_Request r; /* non-blocking: where no progress hook serves, an origin may still wait for me */
        PMPI_Ireduce_scatter_block(w->issued, &expected, 1, MPI_INT, MPI_SUM, w->comm, &r);
        am_wait(1, &r);
        while (w->served_fence < expected) am_idle();
        w->served_fence -= expected;
        memset(w->issued, 0, sizeof(int) * (size_t)w->size);
        w->fence_open = !(assert & MPI_MODE_NOSUCCEED);
        am_win_leave(w);
    }
    return first_error(rc, PMPI_Win_fence(assert, win));
}

int MPI_Win_lock(int type, int rank, int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock(type, rank, assert, win);
    am_win *w = am_state(win);
    if (w && rc == MPI_SUCCESS && rank >= 0 && rank < w->size) {
        am_win_enter(w);
        w->access[rank]++;
        am_credit_lock(w, rank, type == MPI_LOCK_EXCLUSIVE);
        am_win_leave(w);
    }
    return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock_all(assert, win);
    am_win *w = am_state(win);
    if (w && rc == MPI_SUCCESS) {
        am_win_enter(w);
        for (int i = 0; i < w->size; i++) w->access[i]++;
        am_win_leave(w);
    }
    return rc;
}

/* A flush completes the AMs to target (MPI_ANY_SOURCE: all), then MPI's own
 * operations (mpi, called after: the AMs' error comes first). flush_local too:
 * an AM returns output, as MPI_Get_accumulate does, and local completion means
 * that output is in place. */
static int flushed(MPI_Win win, int target)
{
    am_win *w = am_state(win);
    return w ? complete_call(w, target, 0) : MPI_SUCCESS;
}

static int flush_one(MPI_Win win, int rank, int (*mpi)(int, MPI_Win))
{
    int rc = flushed(win, rank);
    return first_error(rc, mpi(rank, win));
}

static int flush_every(MPI_Win win, int (*mpi)(MPI_Win))
{
    int rc = flushed(win, MPI_ANY_SOURCE);
    return first_error(rc, mpi(win));
}

int MPI_Win_flush(int rank, MPI_Win win) { return flush_one(win, rank, PMPI_Win_flush); }
int MPI_Win_flush_local(int rank, MPI_Win win) { return flush_one(win, rank, PMPI_Win_flush_local); }
int MPI_Win_flush_all(MPI_Win win) { return flush_every(win, PMPI_Win_flush_all); }
int MPI_Win_flush_local_all(MPI_Win win) { return flush_every(win, PMPI_Win_flush_local_all); }

int MPI_Win_unlock(int rank, MPI_Win win)
{
    am_win *w = am_state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        am_win_enter(w);
        rc = complete(w, rank, 1);
        if (rank >= 0 && rank < w->size) {
            if (w->access[rank] > 0) w->access[rank]--;
            w->excl[rank] = 0;
        }
        am_win_leave(w);
    }
    return first_error(rc, PMPI_Win_unlock(rank, win));
}

int MPI_Win_unlock_all(MPI_Win win)
{
    am_win *w = am_state(win);
    int rc = MPI_SUCCESS;
    if (w) {
        am_win_enter(w);
        rc = complete(w, MPI_ANY_SOURCE, 1);
        for (int i = 0; i < w->size; i++)
            if (w->access[i] > 0) w->access[i]--;
        am_win_leave(w);
    }
    return first_error(rc, PMPI_Win_unlock_all(win));
}

/* PSCW: an access epoch (start .. complete) opens AMs to the group's ranks. */
static int *group_ranks(am_win *w, MPI_Group g, int *n)
{
    PMPI_Group_size(g, n);
    int *in = malloc(sizeof(int) * (size_t)(*n + 1)), *out = malloc(sizeof(int) * (size_t)(*n + 1));
    if (!in || !out) abort();
    for (int i = 0; i < *n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, *n, in, w->group, out);
    free(in);
    return out;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    int rc = PMPI_Win_start(group, assert, win);
    am_win *w = am_state(win);
    if (w && rc == MPI_SUCCESS) {
        am_win_enter(w);
        free(w->started);
        w->started = group_ranks(w, group, &w->nstarted);
        for (int i = 0; i < w->nstarted; i++)
            if (w->started[i] >= 0) w->access[w->started[i]]++;
        am_win_leave(w);
    }
    return rc;
}

/* Complete the AMs to the started group before the epoch closes, so the targets'
 * MPI_Win_wait returns only after they ran. */
int MPI_Win_complete(MPI_Win win)
{
    am_win *w = am_state(win);
    int rc = MPI_SUCCESS;
    if (w) am_win_enter(w);
    if (w && w->started) {
        int n = w->nstarted, *r = w->started;
        for (int i = 0; i < n; i++)
            if (r[i] >= 0) {
                int e = complete(w, r[i], 1);
                if (rc == MPI_SUCCESS) rc = e;
                if (w->access[r[i]] > 0) w->access[r[i]]--;
            }
        free(r);
        w->started = NULL;
    }
    if (w) am_win_leave(w);
    return first_error(rc, PMPI_Win_complete(win));
}

/* The exposure epoch's target serves AMs until every origin has completed. */
int MPI_Win_wait(MPI_Win win)
{
    am_win *w = am_state(win);
    if (!w) return PMPI_Win_wait(win);
    int done = 0, rc = MPI_SUCCESS;
    while (rc == MPI_SUCCESS && !done) {
        rc = PMPI_Win_test(win, &done);
        if (!done) {
            am_enter();
            am_serve_any();
            am_leave();
        }
    }
    return rc;
}

/* Its non-blocking form serves too: a target polling it is how the origins'
 * AMs complete where no progress hook serves. */
int MPI_Win_test(MPI_Win win, int *flag)
{
    am_win *w = am_state(win);
    if (w && am_try_enter()) {
        am_serve_any();
        am_leave();
    }
    return PMPI_Win_test(win, flag);
}

/* Passive targets serve AMs while they wait in a barrier (where the progress
 * hook is not available; with it, any blocking call serves). */
static int barrier_serving(MPI_Comm comm)
{
    MPI_Request r;
    int done = 0, rc = PMPI_Ibarrier(comm, &r);
    while (rc == MPI_SUCCESS && !done) {
        rc = PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done && am_try_enter()) {
            am_serve_any();
            am_leave();
        }
    }
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    am_enter();
    int serve = am_windows && !am_progress_hooked();
    am_leave();
    return serve ? barrier_serving(comm) : PMPI_Barrier(comm);
}

int MPIX_Am_win_get_sync(MPI_Win win, double *seconds, long *handshakes)
{
    am_win *w = am_state(win);
    if (!w) return am_unknown_window("MPIX_Am_win_get_sync");
    am_win_enter(w);
    *seconds = w->sync_seconds;
    *handshakes = w->handshakes;
    am_win_leave(w);
    return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win)
{
    am_win *w = am_state(*win);
    if (w) {
        __atomic_fetch_add(&win_gen, 1, __ATOMIC_RELEASE);
        complete_call(w, MPI_ANY_SOURCE, 1);
        barrier_serving(w->comm); /* every origin's AMs to me have been served */
        am_progress_detach(w);    /* from here no other thread reaches w */
        while (w->tx) {
            am_tx_drain(w);
        }
        for (am_tx *t = w->tx_free, *n; t; t = n) { n = t->next; free(t->buf); free(t); }
        PMPI_Comm_free(&w->comm);
        PMPI_Group_free(&w->group);
        free(w->started);
        free(w->access); free(w->issued); free(w->inflight); free(w->open); free(w->head); free(w->tail);
        free(w->granted); free(w->staged); free(w->hint); free(w->excl); free(w->holds_all);
        free(w->rx);
        am_range_free(w);
        am_batches_free(w);
        am_win_locks_destroy(w);
        free(w);
    }
    return PMPI_Win_free(win);
}

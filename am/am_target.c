/* Active messages, target side: a batch is received whole, its handlers run in
 * order, and one response for the batch is sent non-blocking (its buffer kept
 * until the send completes).  Targets serve from Open MPI's progress loop, so a
 * target inside any MPI call that progresses (MPI_Recv, MPI_Wait, a collective)
 * runs AMs; under another MPI they are served from the epoch calls only. */
#include "am_internal.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

am_win *am_windows;

int am_fits(const am_win *w, int bytes)
{
    if (bytes <= SYSTEM_BUF_BYTES) return 1;
    for (int i = 0; i < w->nbuf; i++)
        if (w->buf[i] && w->buf_size[i] >= bytes) return 1;
    return 0;
}

int MPIX_Am_win_buffer_attach(void *buffer, int size, MPI_Win win)
{
    am_win *w = am_state(win);
    if (!w) return am_fail(MPI_ERR_WIN, "MPIX_Am_win_buffer_attach: window unknown to mpix_am");
    if (!buffer || size <= 0) return am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: null buffer or size <= 0");
    for (int i = 0; i < MAX_BUFS; i++)
        if (!w->buf[i]) {
            w->buf[i] = buffer;
            w->buf_size[i] = size;
            w->user_total += size;
            if (i >= w->nbuf) w->nbuf = i + 1;
            return MPI_SUCCESS;
        }
    return am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: more than 16 buffers attached");
}

/* Waits until the origins' reservations leave the buffer's bytes free (a
 * target runs each AM to completion inside one call, so none is running). */
int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win)
{
    am_win *w = am_state(win);
    if (!w) return am_fail(MPI_ERR_WIN, "MPIX_Am_win_buffer_detach: window unknown to mpix_am");
    for (int i = 0; i < w->nbuf; i++)
        if (w->buf[i] == buffer) {
            am_busy++;
            while (w->user_total - w->buf_size[i] < w->user_reserved) am_serve_any();
            am_busy--;
            w->user_total -= w->buf_size[i];
            w->buf[i] = NULL;
            return MPI_SUCCESS;
        }
    return am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_detach: buffer is not attached to this window");
}

/* Moves completed response sends to the spare list. */
void am_tx_drain(am_win *w)
{
    am_tx **p = &w->tx;
    while (*p) {
        am_tx *t = *p;
        int done = 0;
        PMPI_Test(&t->req, &done, MPI_STATUS_IGNORE);
        if (!done) { p = &t->next; continue; }
        *p = t->next;
        t->next = w->tx_free;
        w->tx_free = t;
    }
}

/* Runs one MPIX_Amv: the handler sees every segment at its fixed offset and fills
 * the counts; the output is packed when the generated share is small enough. */
static void run_amv(am_win *w, const am_hdr *h, const char *in, char **resp, size_t *cap, size_t *len)
{
    size_t full = (size_t)h->out_bytes * (size_t)h->nseg, chead = AM_PAD(sizeof(int) * (size_t)h->nseg);
    *resp = am_grow(*resp, cap, *len + sizeof(am_resp) + chead + AM_PAD(full), 1);
    char *base = *resp + *len;
    int *counts = (int *)(void *)(base + sizeof(am_resp)); /* 8-aligned: every part is padded */
    char *out = base + sizeof(am_resp) + chead;
    memset(counts, 0, chead);
    MPIX_AMV_USER_FUNCTION *fn = (MPIX_AMV_USER_FUNCTION *)am_ops[h->op].fn;
    am_resp r = { fn(in, h->in_count, am_type_of(h->in_type), out, h->out_count, am_type_of(h->out_type), counts,
                     h->nseg, w->base + h->disp * w->disp_unit, h->pcount, am_type_of(h->p_type)), 0 };
    size_t elem = h->out_count ? (size_t)h->out_bytes / (size_t)h->out_count : 0, generated = 0;
    for (int s = 0; r.status == MPI_SUCCESS && s < h->nseg; s++) {
        if (counts[s] < 0 || counts[s] > h->out_count) r.status = MPI_ERR_COUNT;
        else generated += (size_t)counts[s] * elem;
    }
    size_t used = full;
    if (r.status == MPI_SUCCESS) {
        r.packed = full == 0 || (double)generated <= (double)h->pack_threshold * (double)full;
        if (r.packed) { /* each packed segment starts at or before its fixed offset: move in order */
            used = 0;
            for (int s = 0; s < h->nseg; s++) {
                size_t n = (size_t)counts[s] * elem;
                memmove(out + used, out + (size_t)s * (size_t)h->out_bytes, n);
                used += n;
            }
        }
    }
    memcpy(base, &r, sizeof r);
    *len += sizeof r + (r.status == MPI_SUCCESS ? chead + AM_PAD(used) : 0);
}

static void run_am(am_win *w, const am_hdr *h, const char *in, char **resp, size_t *cap, size_t *len)
{
    size_t full = (size_t)h->out_bytes * (size_t)h->nseg;
    *resp = am_grow(*resp, cap, *len + sizeof(am_resp) + AM_PAD(full), 1);
    char *base = *resp + *len, *out = base + sizeof(am_resp);
    am_resp r = { MPI_SUCCESS, 0 };
    MPIX_AM_USER_FUNCTION *fn = (MPIX_AM_USER_FUNCTION *)am_ops[h->op].fn;
    for (int s = 0; r.status == MPI_SUCCESS && s < h->nseg; s++)
        r.status = fn(in + (size_t)s * (size_t)h->in_bytes, h->in_count, am_type_of(h->in_type),
                      out + (size_t)s * (size_t)h->out_bytes, h->out_count, am_type_of(h->out_type),
                      w->base + h->disp * w->disp_unit, h->pcount, am_type_of(h->p_type));
    memcpy(base, &r, sizeof r);
    *len += sizeof r + (r.status == MPI_SUCCESS ? AM_PAD(full) : 0);
}

/* Serves one batch or reservation message if one has arrived; returns 1 if it
 * did.  One probe for both tags: responses and grants never arrive unexpected
 * (their receives are posted before the request goes), so only these match. */
int am_serve_one(am_win *w)
{
    int flag, bytes;
    MPI_Message m;
    MPI_Status st;
    PMPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, w->comm, &flag, &m, &st);
    if (!flag) return 0;
    if (st.MPI_TAG == TAG_RSV) {
        am_credit_serve(w, &m, &st);
        return 1;
    }
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    w->rx = am_grow(w->rx, &w->rx_cap, (size_t)bytes, 1);
    PMPI_Mrecv(w->rx, bytes, MPI_BYTE, &m, MPI_STATUS_IGNORE);
    batch_hdr bh;
    memcpy(&bh, w->rx, sizeof bh);
    am_tx *t = w->tx_free;
    if (t) w->tx_free = t->next;
    else if (!(t = calloc(1, sizeof *t))) abort();
    size_t len = 0;
    const char *p = w->rx + sizeof bh;
    for (int i = 0; i < bh.nams; i++) {
        am_hdr h;
        memcpy(&h, p, sizeof h);
        const char *in = p + sizeof h;
        p = in + AM_PAD((size_t)h.in_bytes * (size_t)h.nseg);
        int kind = h.op >= 0 && h.op < am_nops ? am_ops[h.op].kind : -1;
        am_resp r = { MPI_SUCCESS, 0 };
        if (kind < 0) r.status = MPI_ERR_OP;
        else if (!am_fits(w, h.in_bytes + h.out_bytes)) r.status = MPI_ERR_BUFFER;
        if (r.status != MPI_SUCCESS) {
            t->buf = am_grow(t->buf, &t->cap, len + sizeof r, 1);
            memcpy(t->buf + len, &r, sizeof r);
            len += sizeof r;
        } else if (kind == KIND_AM) {
            run_am(w, &h, in, &t->buf, &t->cap, &len);
        } else {
            run_amv(w, &h, in, &t->buf, &t->cap, &len);
        }
    }
    PMPI_Isend(t->buf, (int)len, MPI_BYTE, st.MPI_SOURCE, TAG_RESP, w->comm, &t->req);
    t->next = w->tx;
    w->tx = t;
    am_tx_drain(w);
    if (bh.fence) w->served_fence++;
    return 1;
}

/* Serves what has arrived on every window: a rank waiting inside the library
 * for one window must not starve an origin that needs it on another. */
int am_serve_any(void)
{
    int n = 0;
    for (am_win *w = am_windows; w; w = w->next) n += am_serve_one(w);
    return n;
}

/* Open MPI's progress hook, found at run time so that the library also loads
 * under another MPI (there: no hook, AMs served from the epoch calls).  Under
 * pml/ubermatch the PML counts what arrives unexpected on each AM window's
 * communicator (pml_ubermatch_am_hooks.h), so the callback reads one word per
 * window and runs at every opal_progress, right after the PML's own progress
 * that delivered the AM; where nothing counts, it probes, at low priority
 * (every 8th opal_progress) so that other traffic pays little for the probes. */
typedef int (*progress_fn)(void);
static int (*progress_register)(progress_fn), (*progress_unregister)(progress_fn);
static int hooked;
static const mca_pml_ubermatch_am_hooks_t *pml_hooks;

static int progress_cb(void)
{
    if (am_busy) return 0; /* our own MPI calls progress too: no re-entry */
    int n = 0;
    for (am_win *w = am_windows; w; w = w->next) {
        if (w->watched && w->arrived == w->seen) continue;
        am_busy++;
        w->seen = w->arrived; /* what arrives while serving moves it on: served next time */
        while (am_serve_one(w)) n++;
        am_busy--;
    }
    return n;
}

/* pml/ubermatch's hooks through the MCA variable it publishes (Open MPI's
 * mca_base_var_*, looked up like opal_progress_register_lp); NULL elsewhere. */
static const mca_pml_ubermatch_am_hooks_t *find_pml_hooks(void)
{
    int (*var_find)(const char *, const char *, const char *, const char *);
    int (*var_get)(int, const void *, void *, const char **);
    const unsigned long long *address = NULL;
    *(void **)&var_find = dlsym(RTLD_DEFAULT, "mca_base_var_find");
    *(void **)&var_get = dlsym(RTLD_DEFAULT, "mca_base_var_get_value");
    if (!var_find || !var_get) return NULL;
    int index = var_find("ompi", "pml", "ubermatch", MCA_PML_UBERMATCH_AM_HOOKS_VAR);
    if (index < 0 || var_get(index, &address, NULL, NULL) != 0 || !address || !*address) return NULL;
    const mca_pml_ubermatch_am_hooks_t *h = (const void *)(uintptr_t)*address;
    return h->version == MCA_PML_UBERMATCH_AM_HOOKS_VERSION ? h : NULL;
}

int am_progress_hooked(void)
{
    return hooked;
}

/* Waits for n requests inside the library.  With the hook, the progress that
 * MPI_Testall makes serves AMs (the guard is lifted around it: the callback
 * touches only the target side), one poll per iteration instead of a probe per
 * window on top; without it, serve by hand. */
void am_wait(int n, MPI_Request *r)
{
    int done = 0;
    while (!done) {
        int busy = am_busy;
        if (hooked) am_busy = 0;
        PMPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        am_busy = busy;
        if (!done && !hooked) am_serve_any();
    }
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: unhook before the
 * library below goes away, even if a window was never freed. */
static int at_finalize(MPI_Comm c, int k, void *v, void *e)
{
    (void)c; (void)k; (void)v; (void)e;
    am_windows = NULL;
    if (hooked) progress_unregister(progress_cb);
    hooked = 0;
    return MPI_SUCCESS;
}

void am_progress_attach(am_win *w)
{
    static int finalize_key = MPI_KEYVAL_INVALID;
    if (finalize_key == MPI_KEYVAL_INVALID) {
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &finalize_key, NULL);
        PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_key, NULL);
    }
    w->next = am_windows;
    am_windows = w;
    if (getenv("MPIX_AM_NO_PROGRESS_HOOK")) return;
    if (!progress_register) {
        pml_hooks = getenv("MPIX_AM_NO_PML_HOOKS") ? NULL : find_pml_hooks();
        *(void **)&progress_register =
            dlsym(RTLD_DEFAULT, pml_hooks ? "opal_progress_register" : "opal_progress_register_lp");
        *(void **)&progress_unregister = dlsym(RTLD_DEFAULT, "opal_progress_unregister");
    }
    /* seen != arrived: the first callback probes for what came before the watch */
    w->seen = w->arrived - 1;
    w->watched = pml_hooks && pml_hooks->watch_unexpected(w->comm, &w->arrived) == 0;
    if (!hooked && progress_register && progress_unregister && progress_register(progress_cb) == 0) hooked = 1;
}

void am_progress_detach(am_win *w)
{
    for (am_win **p = &am_windows; *p; p = &(*p)->next)
        if (*p == w) { *p = w->next; break; }
    if (w->watched) pml_hooks->watch_unexpected(w->comm, NULL);
    w->watched = 0;
    if (!am_windows && hooked) {
        progress_unregister(progress_cb);
        hooked = 0;
    }
}

/* Active messages, target side: a batch arrives whole (taken at arrival into the
 * window's inbox under pml/ubermatch, else probed and received), its handlers run
 * in order, and one response for the batch is sent non-blocking (its buffer kept
 * until the send completes).  Targets serve from Open MPI's progress loop, so a
 * target inside any MPI call that progresses (MPI_Recv, MPI_Wait, a collective)
 * runs AMs; under another MPI they are served from the epoch calls only. */
#include "am_internal.h"
#include <dlfcn.h>
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
/* The PML hands a window to its arrival hook under its own lock, which
 * ThreadSanitizer cannot see in the uninstrumented component: say so. */
#define HANDED_OVER(w) __tsan_release(w)
#define TAKEN_OVER(w) __tsan_acquire(w)
#else
#define HANDED_OVER(w) ((void)(w))
#define TAKEN_OVER(w) ((void)(w))
#endif
#include <stdint.h>
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
    if (!w) return am_unknown_window("MPIX_Am_win_buffer_attach");
    if (!buffer || size <= 0) return am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: null buffer or size <= 0");
    int i = 0;
    am_win_enter(w);
    while (i < MAX_BUFS && w->buf[i]) i++;
    if (i < MAX_BUFS) {
        w->buf[i] = buffer;
        w->buf_size[i] = size;
        w->user_total += size;
        if (i >= w->nbuf) w->nbuf = i + 1;
    }
    am_win_leave(w);
    return i < MAX_BUFS ? MPI_SUCCESS
                        : am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_attach: more than 16 buffers attached");
}

/* Waits until the origins' reservations leave the buffer's bytes free (a
 * target runs each AM to completion inside one call, so none is running). */
int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win)
{
    am_win *w = am_state(win);
    if (!w) return am_unknown_window("MPIX_Am_win_buffer_detach");
    am_win_enter(w);
    int i = 0;
    while (i < w->nbuf && w->buf[i] != buffer) i++;
    const int found = i < w->nbuf; /* w's fields are read under its lock only */
    if (found) {
        while (w->user_total - w->buf_size[i] < w->user_reserved) am_idle();
        w->user_total -= w->buf_size[i];
        w->buf[i] = NULL;
    }
    am_win_leave(w);
    return found ? MPI_SUCCESS
                 : am_fail(MPI_ERR_BUFFER, "MPIX_Am_win_buffer_detach: buffer is not attached to this window");
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
        w->ntx--;
        t->next = w->tx_free;
        w->tx_free = t;
    }
}

/* Packs an output written at fixed offsets, in order (each packed segment
 * starts at or before its fixed offset), a run at a time: one move, none where
 * nothing before it was short. Returns the bytes it takes. */
static size_t pack_in_place(const am_hdr *h, const int *counts, char *out, size_t elem)
{
    size_t used = 0, from = 0, run = 0;
    for (int s = 0; s < h->nseg; s++) {
        run += (size_t)counts[s] * elem;
        if (!am_run_ends(counts, s, h->nseg, h->out_count)) continue;
        if (used != from && run) memmove(out + used, out + from, run);
        used += run;
        from = (size_t)(s + 1) * (size_t)h->out_bytes;
        run = 0;
    }
    return used;
}

/* Moves a packed output's segments out to their fixed offsets, the last first
 * (each lies at or before its place): the inverse of pack_in_place. */
static void unpack_in_place(const am_hdr *h, const int *counts, char *out, size_t elem, size_t used)
{
    for (int s = h->nseg - 1; s >= 0; s--) {
        size_t n = (size_t)counts[s] * elem, to = (size_t)s * (size_t)h->out_bytes;
        used -= n;
        if (n && used != to) memmove(out + to, out + used, n);
    }
}

/* Runs one MPIX_Amv: the output is packed when the generated share is small
 * enough. Where the handler's last MPIX_Amv on the window packed, it runs once per
 * segment (a unit the runtime may choose), each output written where packing
 * puts it: no moves after a handler that just wrote it (those moves cost a
 * tenth of such an AM); a guess that turns out wrong costs the moves back. */
static void run_amv(am_win *w, const am_hdr *h, void *pers, const char *in, char **resp, size_t *cap, size_t *len)
{
    size_t full = (size_t)h->out_bytes * (size_t)h->nseg, chead = AM_PAD(sizeof(int) * (size_t)h->nseg);
    *resp = am_grow(*resp, cap, *len + sizeof(am_resp) + chead + AM_PAD(full), 1);
    char *base = *resp + *len;
    int *counts = (int *)(void *)(base + sizeof(am_resp)); /* 8-aligned: every part is padded */
    char *out = base + sizeof(am_resp) + chead;
    memset(counts, 0, chead);
    MPIX_AMV_USER_FUNCTION *fn = (MPIX_AMV_USER_FUNCTION *)am_ops[h->op].fn;
    const MPI_Datatype it = am_type_of(h->in_type), ot = am_type_of(h->out_type), pt = am_type_of(h->p_type);
    size_t elem = h->out_count ? (size_t)h->out_bytes / (size_t)h->out_count : 0, generated = 0;
    const int in_place = w->amv_packed[h->op];
    am_resp r = { MPI_SUCCESS, 0 };
    if (!in_place)
        r.status = fn(in, h->in_count, it, out, h->out_count, ot, counts, h->nseg, pers, h->pcount, pt);
    for (int s = 0; r.status == MPI_SUCCESS && s < h->nseg; s++) {
        if (in_place)
            r.status = fn(in + (size_t)s * (size_t)h->in_bytes, h->in_count, it, out + generated, h->out_count, ot,
                          counts + s, 1, pers, h->pcount, pt);
        if (r.status != MPI_SUCCESS) break;
        if (counts[s] < 0 || counts[s] > h->out_count) r.status = MPI_ERR_COUNT;
        else generated += (size_t)counts[s] * elem;
    }
    size_t used = full;
    if (r.status == MPI_SUCCESS) {
        /* below the threshold, as the paper's (at exactly its share packing costs
         * more than the bytes it saves), the share rounded as the threshold is;
         * 1.0 packs always (the paper's AMV(1.0)) */
        r.packed = generated == 0 || h->pack_threshold >= 1.0f ||
                   (float)((double)generated / (double)full) < h->pack_threshold;
        w->amv_packed[h->op] = (unsigned char)r.packed;
        if (r.packed) used = in_place ? generated : pack_in_place(h, counts, out, elem);
        else if (in_place) unpack_in_place(h, counts, out, elem, generated);
    }
    memcpy(base, &r, sizeof r);
    *len += sizeof r + (r.status == MPI_SUCCESS ? chead + AM_PAD(used) : 0);
}

static void run_am(const am_hdr *h, void *pers, const char *in, char **resp, size_t *cap, size_t *len)
{
    size_t full = (size_t)h->out_bytes * (size_t)h->nseg;
    *resp = am_grow(*resp, cap, *len + sizeof(am_resp) + AM_PAD(full), 1);
    char *base = *resp + *len, *out = base + sizeof(am_resp);
    am_resp r = { MPI_SUCCESS, 0 };
    MPIX_AM_USER_FUNCTION *fn = (MPIX_AM_USER_FUNCTION *)am_ops[h->op].fn;
    /* looked up once: per segment they took about half of a small handler's own time */
    const MPI_Datatype it = am_type_of(h->in_type), ot = am_type_of(h->out_type), pt = am_type_of(h->p_type);
    for (int s = 0; r.status == MPI_SUCCESS && s < h->nseg; s++)
        r.status = fn(in + (size_t)s * (size_t)h->in_bytes, h->in_count, it, out + (size_t)s * (size_t)h->out_bytes,
                      h->out_count, ot, pers, h->pcount, pt);
    memcpy(base, &r, sizeof r);
    *len += sizeof r + (r.status == MPI_SUCCESS ? AM_PAD(full) : 0);
}

/* Runs a batch's handlers in order and sends its response non-blocking. */
static void serve_batch(am_win *w, int source, const char *msg)
{
    batch_hdr bh;
    memcpy(&bh, msg, sizeof bh);
    /* Responses are tested only once TX_UNTESTED are in flight, not after each
     * send: a test is a full fence (ompi_request_default_test), which waits for
     * the latest stores into the shared-memory ring, 7-11% of the target's
     * time when made every batch. */
    if (!w->tx_free && w->ntx >= TX_UNTESTED) am_tx_drain(w);
    am_tx *t = w->tx_free;
    if (t) w->tx_free = t->next;
    else if (!(t = calloc(1, sizeof *t))) abort();
    size_t len = 0;
    const char *p = msg + sizeof bh;
    for (int i = 0; i < bh.nams; i++) {
        am_hdr h;
        memcpy(&h, p, sizeof h);
        const char *in = p + sizeof h;
        p = in + AM_PAD((size_t)h.in_bytes * (size_t)h.nseg);
        int kind = h.op >= 0 && h.op < am_nops ? am_ops[h.op].kind : -1;
        am_resp r = { MPI_SUCCESS, 0 };
        void *pers = NULL;
        if (kind < 0) r.status = MPI_ERR_OP;
        else if (!am_fits(w, h.in_bytes + h.out_bytes)) r.status = MPI_ERR_BUFFER;
        else if (!(pers = am_persistent(w, &h))) r.status = MPI_ERR_RMA_RANGE;
        if (r.status != MPI_SUCCESS) {
            t->buf = am_grow(t->buf, &t->cap, len + sizeof r, 1);
            memcpy(t->buf + len, &r, sizeof r);
            len += sizeof r;
        } else if (kind == KIND_AM) {
            run_am(&h, pers, in, &t->buf, &t->cap, &len);
        } else {
            run_amv(w, &h, pers, in, &t->buf, &t->cap, &len);
        }
    }
    w->user_reserved -= bh.user; /* reserved for this batch alone (am_credit.c) */
    PMPI_Isend(t->buf, (int)len, MPI_BYTE, source, bh.resp_tag, w->comm, &t->req);
    t->next = w->tx;
    w->tx = t;
    w->ntx++;
    if (bh.fence) w->served_fence++;
}

/* Receives a matched message into the window's receive buffer. */
static const char *receive(am_win *w, MPI_Message *m, const MPI_Status *st)
{
    int bytes;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    w->rx = am_grow(w->rx, &w->rx_cap, (size_t)bytes, 1);
    PMPI_Mrecv(w->rx, bytes, MPI_BYTE, m, MPI_STATUS_IGNORE);
    return w->rx;
}

/* Serves one batch or reservation message if one has arrived; returns 1 if it
 * did.  Taken at arrival: the inbox's oldest (one whose payload was not offered
 * is the oldest of its source and tag left to matching: received with a probe
 * for exactly that).  Else one probe for both tags: responses and grants never
 * arrive unexpected (their receives are posted before the request goes). */
int am_serve_one(am_win *w)
{
    MPI_Message m;
    MPI_Status st;
    const char *msg;
    am_drain(w);
    am_rx *r = w->inbox;
    if (r) {
        if (!(w->inbox = r->next)) w->inbox_tail = NULL;
        st.MPI_SOURCE = r->source;
        st.MPI_TAG = r->tag;
        if (r->here) {
            msg = r->buf;
        } else {
            PMPI_Mprobe(r->source, r->tag, w->comm, &m, &st);
            msg = receive(w, &m, &st);
        }
    } else {
        int flag = 0;
        if (!w->taken) PMPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, w->comm, &flag, &m, &st);
        if (!flag) return 0;
        msg = receive(w, &m, &st);
    }
    if (st.MPI_TAG == TAG_RSV) am_credit_serve(w, st.MPI_SOURCE, msg);
    else serve_batch(w, st.MPI_SOURCE, msg);
    if (r) am_rx_put(w, r); /* after serving: msg may be its buffer */
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
 * pml/ubermatch the PML hands us each window's messages at arrival
 * (pml_ubermatch_am_hooks.h), so the callback looks at one pointer per window
 * and runs at every opal_progress, right after the PML's own progress that
 * delivered the AM; elsewhere it probes, at low priority (every 8th
 * opal_progress) so that other traffic pays little for the probes. */
typedef int (*progress_fn)(void);
static int (*progress_register)(progress_fn), (*progress_unregister)(progress_fn);
static progress_fn opal_progress_fn;
static int hooked;
static const mca_pml_ubermatch_am_hooks_t *pml_hooks;

static int progress_cb(void)
{
    /* our own MPI calls progress too: no re-entry (nor a wait for another thread's lock) */
    if (!am_try_enter()) return 0;
    int n = 0;
    for (am_win *w = am_windows; w; w = w->next) {
        am_drain(w);
        if (w->taken && !w->inbox) continue;
        while (am_serve_one(w)) n++;
    }
    am_leave();
    return n;
}

/* pml/ubermatch's arrival hook: requests and reservations join the inbox (a
 * rendezvous one as a place holder, left to matching), taken responses go to
 * their batch; the rest (posted responses, grants) to matching. No MPI here. */
static int take(void *arg, int source, int tag, const void *data, size_t len)
{
    am_win *w = arg;
    TAKEN_OVER(w);
    if (am_threaded()) return am_defer(w, source, tag, data, len);
    if (tag == TAG_ANSWER) return am_take_answer(w, source, data, len);
    if (tag != TAG_REQ && tag != TAG_RSV) return 0;
    am_rx *r = am_rx_get(w);
    r->source = source;
    r->tag = tag;
    r->here = data != NULL;
    if (data) {
        r->buf = am_grow(r->buf, &r->cap, len, 1);
        memcpy(r->buf, data, len);
    }
    r->next = NULL;
    if (w->inbox_tail) w->inbox_tail->next = r;
    else w->inbox = r;
    w->inbox_tail = r;
    return r->here;
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

void am_opal_progress(void)
{
    if (opal_progress_fn) opal_progress_fn();
}

/* Waits for n requests inside the library.  With the hook, the progress that
 * MPI_Waitall makes serves AMs (the lock is let go around it: the callback
 * touches only the target side); without it, test and serve by hand. */
void am_wait(int n, MPI_Request *r)
{
    if (hooked) {
        int busy = am_release();
        PMPI_Waitall(n, r, MPI_STATUSES_IGNORE);
        am_reacquire(busy);
        return;
    }
    for (int done = 0; !done;) {
        PMPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        if (!done) am_idle();
    }
}

/* Waits for a response taken at arrival (only where the hooks are): drives
 * pml/ubermatch's progress alone and the rest of Open MPI's every 64th round,
 * as the PML's blocking calls do, serving what arrives for us meanwhile. */
void am_wait_answer(am_win *w, am_batch *b)
{
    am_drain(w);
    if (b->answered) return;
    int busy = am_release();
    for (unsigned round = 1; !__atomic_load_n(&b->answered, __ATOMIC_ACQUIRE); round++) {
        if (round % 64) pml_hooks->progress();
        else opal_progress_fn();
        progress_cb(); /* it drains, where it gets the lock */
        if (am_threaded() && round % 16 == 0) { /* where it did not: another thread holds it now and then */
            am_reacquire(busy);
            am_drain(w);
            busy = am_release();
        }
    }
    am_reacquire(busy);
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: unhook before the
 * library below goes away, even if a window was never freed. */
static int at_finalize(MPI_Comm c, int k, void *v, void *e)
{
    (void)c; (void)k; (void)v; (void)e;
    am_enter();
    am_windows = NULL;
    if (hooked) progress_unregister(progress_cb);
    hooked = 0;
    am_leave();
    return MPI_SUCCESS;
}

void am_progress_attach(am_win *w)
{
    static int finalize_key = MPI_KEYVAL_INVALID;
    am_enter();
    if (finalize_key == MPI_KEYVAL_INVALID) {
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &finalize_key, NULL);
        PMPI_Comm_set_attr(MPI_COMM_SELF, finalize_key, NULL);
    }
    w->next = am_windows;
    am_windows = w;
    if (!getenv("MPIX_AM_NO_PROGRESS_HOOK")) {
        if (!progress_register) {
            pml_hooks = getenv("MPIX_AM_NO_PML_HOOKS") ? NULL : find_pml_hooks();
            *(void **)&progress_register =
                dlsym(RTLD_DEFAULT, pml_hooks ? "opal_progress_register" : "opal_progress_register_lp");
            *(void **)&progress_unregister = dlsym(RTLD_DEFAULT, "opal_progress_unregister");
            *(void **)&opal_progress_fn = dlsym(RTLD_DEFAULT, "opal_progress");
        }
        if (!hooked && progress_register && progress_unregister && progress_register(progress_cb) == 0)
            hooked = 1;
        HANDED_OVER(w);
        w->taken = hooked && pml_hooks && opal_progress_fn && pml_hooks->set_arrival(w->comm, take, w) == 0;
    }
    am_leave();
    /* nobody sends on w->comm before every member takes its arrivals */
    PMPI_Barrier(w->comm);
}

void am_progress_detach(am_win *w)
{
    am_enter();
    for (am_win **p = &am_windows; *p; p = &(*p)->next)
        if (*p == w) { *p = w->next; break; }
    if (w->taken) pml_hooks->set_arrival(w->comm, NULL, NULL);
    w->taken = 0;
    am_drain(w); /* what the hook deferred before it was unhooked: nothing, once every AM was served */
    for (am_rx *r = w->inbox, *n; r; r = n) { n = r->next; free(r->buf); free(r); }
    for (am_rx *r = w->rx_free, *n; r; r = n) { n = r->next; free(r->buf); free(r); }
    w->inbox = w->inbox_tail = w->rx_free = NULL;
    if (!am_windows && hooked) {
        progress_unregister(progress_cb);
        hooked = 0;
    }
    am_leave();
}

/* Active messages, origin side: MPIX_Am / MPIX_Amv coalesce AMs per target into
 * batches sent non-blocking (point-to-point on a private duplicate of the window's
 * communicator); a batch's response carries every AM's output.  Completion waits
 * for the responses, serving incoming AMs meanwhile, so no AM costs a blocking
 * round trip of its own. */
#include "am_internal.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

am_op_entry am_ops[MAX_OPS];
int am_nops;

int am_fail(int code, const char *msg)
{
    fprintf(stderr, "mpix_am: %s\n", msg);
    return code;
}

void *am_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    p = realloc(p, c * elem);
    if (!p) abort(); /* out of memory while queueing an AM: nothing sane to return */
    *cap = c;
    return p;
}

/* Predefined types travel as an index, so the handler sees the origin's type and
 * counts; any other type travels packed, as bytes. */
static MPI_Datatype types[16];
static int sizes[16], ntypes; /* sizes: MPI_Type_size's answer, asked once */
static pthread_once_t types_once = PTHREAD_ONCE_INIT;
static int types_ready; /* set (release) once filled: the look-ups' fast path */

static void types_fill(void)
{
    MPI_Datatype t[] = { MPI_BYTE, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT,
                         MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG,
                         MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
                         MPI_INT64_T, MPI_UINT64_T };
    memcpy(types, t, sizeof t);
    ntypes = (int)(sizeof t / sizeof t[0]);
    for (int i = 0; i < ntypes; i++) PMPI_Type_size(types[i], &sizes[i]);
    __atomic_store_n(&types_ready, 1, __ATOMIC_RELEASE);
}

static inline void types_init(void)
{
    if (!__atomic_load_n(&types_ready, __ATOMIC_ACQUIRE)) pthread_once(&types_once, types_fill);
}

int am_type_bytes(int index)
{
    types_init();
    return index >= 0 && index < ntypes ? sizes[index] : 1;
}

/* The size of t, whose am_type_index is index (which filled the table). */
static inline int type_size(MPI_Datatype t, int index)
{
    int size;
    if (index >= 0) return sizes[index];
    PMPI_Type_size(t, &size);
    return size;
}

int am_type_index(MPI_Datatype t)
{
    types_init();
    for (int i = 0; i < ntypes; i++)
        if (types[i] == t) return i;
    return -1;
}

MPI_Datatype am_type_of(int index)
{
    types_init();
    return index >= 0 && index < ntypes ? types[index] : MPI_BYTE;
}

static int op_create(int kind, void *fn, MPIX_Am_op *op)
{
    if (!fn || !op) return am_fail(MPI_ERR_ARG, "MPIX_Am(v)_op_create: null handler or op");
    am_enter(); /* targets read the table while serving */
    int full = am_nops == MAX_OPS;
    if (!full) {
        am_ops[am_nops].kind = kind;
        am_ops[am_nops].fn = fn;
        *op = am_nops++;
    }
    am_leave();
    return full ? am_fail(MPI_ERR_INTERN, "MPIX_Am(v)_op_create: more than 64 handlers") : MPI_SUCCESS;
}

int MPIX_Am_op_create(MPIX_AM_USER_FUNCTION *fn, MPIX_Am_op *op)
{
    return op_create(KIND_AM, (void *)fn, op);
}

int MPIX_Amv_op_create(MPIX_AMV_USER_FUNCTION *fn, MPIX_Am_op *op)
{
    return op_create(KIND_AMV, (void *)fn, op);
}

/* Batches are recycled through the window's spare list with their buffers. */
static am_batch *batch_new(am_win *w, int target)
{
    am_batch *b = w->spare;
    if (b) {
        w->spare = b->next;
    } else {
        if (!(b = calloc(1, sizeof *b))) abort();
        b->send = am_grow(NULL, &b->send_cap, BATCH_BYTES + 256, 1);
    }
    b->next = NULL;
    b->n = 0;
    b->amv = 0;
    b->resp_len = 0;
    b->user = 0;
    b->target = target;
    b->fence = !w->access[target];
    b->send_len = sizeof(batch_hdr);
    return b;
}

static void batch_recycle(am_win *w, am_batch *b)
{
    b->next = w->spare;
    w->spare = b;
}

void am_batches_free(am_win *w)
{
    for (am_batch *b = w->spare, *n; b; b = n) {
        n = b->next;
        free(b->send); free(b->resp); free(b->slot); free(b);
    }
    w->spare = NULL;
}

void am_send_open(am_win *w, int target)
{
    am_batch *b = w->open[target];
    if (!b) return;
    w->open[target] = NULL;
    /* taken at arrival where pml/ubermatch offers it: no receive to post, no match */
    b->posted = !w->taken;
    b->answered = 0;
    batch_hdr bh = { b->n, b->fence, b->posted ? TAG_RESP : TAG_ANSWER, 0, b->user };
    memcpy(b->send, &bh, sizeof bh);
    b->resp = am_grow(b->resp, &b->resp_cap, b->resp_len, 1);
    if (b->posted) PMPI_Irecv(b->resp, (int)b->resp_len, MPI_BYTE, target, TAG_RESP, w->comm, &b->req[1]);
    else b->req[1] = MPI_REQUEST_NULL;
    PMPI_Isend(b->send, (int)b->send_len, MPI_BYTE, target, TAG_REQ, w->comm, &b->req[0]);
    if (w->tail[target]) w->tail[target]->next = b;
    else w->head[target] = b;
    w->tail[target] = b;
    w->inflight[target]++;
    if (b->fence) w->issued[target]++;
}

static void record_error(am_win *w, int err)
{
    if (w->error == MPI_SUCCESS) w->error = err;
}

/* The bytes one AM's response r takes unless its output came packed. */
static size_t resp_whole(const am_slot *s, const am_resp *r)
{
    if (r->status != MPI_SUCCESS) return sizeof *r;
    size_t n = sizeof *r + AM_PAD((size_t)s->out_bytes * (size_t)s->nseg);
    return s->kind == KIND_AM ? n : n + AM_PAD(sizeof(int) * (size_t)s->nseg);
}

/* Copies one AM's output out of a response; returns the bytes it took. */
static size_t unpack_one(am_win *w, const am_slot *s, const char *p)
{
    am_resp r;
    memcpy(&r, p, sizeof r);
    size_t off = sizeof r, full = (size_t)s->out_bytes * (size_t)s->nseg;
    if (r.status != MPI_SUCCESS) { record_error(w, r.status); return resp_whole(s, &r); }
    if (s->kind == KIND_AM) {
        if (s->packed_type >= 0) {
            if (full) memcpy(s->out, p + off, full);
        } else {
            int pos = 0;
            PMPI_Unpack(p + off, (int)full, &pos, s->out, s->out_count * s->nseg, s->out_type, w->comm);
        }
        return resp_whole(s, &r);
    }
    memcpy(s->counts, p + off, sizeof(int) * (size_t)s->nseg);
    off += AM_PAD(sizeof(int) * (size_t)s->nseg);
    if (!r.packed) {
        if (full) memcpy(s->out, p + off, full);
        return resp_whole(s, &r);
    }
    size_t elem = (size_t)s->out_bytes / (size_t)(s->out_count ? s->out_count : 1), used = 0, at = 0, run = 0;
    for (int g = 0; g < s->nseg; g++) { /* a run at a time: one copy, as the target moved it */
        run += (size_t)s->counts[g] * elem;
        if (!am_run_ends(s->counts, g, s->nseg, s->out_count)) continue;
        if (run) memcpy((char *)s->out + at, p + off + used, run);
        used += run;
        at = (size_t)(g + 1) * (size_t)s->out_bytes;
        run = 0;
    }
    return off + AM_PAD(used);
}

/* The arrival hook's part for responses (am_target.c): the oldest batch to
 * source still waiting for a taken response gets this one (a target answers
 * its batches in order). A rendezvous response is left to matching and
 * received by am_retire_oldest. Must not call MPI. */
int am_take_answer(am_win *w, int source, const void *data, size_t len)
{
    am_batch *b = w->head[source];
    while (b && (b->posted || b->answered)) b = b->next;
    if (!b) return 0; /* none waits for it: cannot happen; matching keeps it */
    if (!data) {
        __atomic_store_n(&b->answered, -1, __ATOMIC_RELEASE);
        return 0;
    }
    b->resp = am_grow(b->resp, &b->resp_cap, len, 1);
    if (!b->amv) {
        memcpy(b->resp, data, len);
    } else {
        /* A packed MPIX_Amv output is many short pieces: read once, from here,
         * they cost less than a copy of the response first (a pass over all of
         * it); the rest is kept, in runs, for am_retire_oldest. Only data of
         * these outputs is written (no MPI: packed outputs are of predefined types). */
        const char *p = data, *keep = data;
        size_t kept = 0;
        for (int i = 0; i < b->n; i++) {
            am_slot *s = &b->slot[i];
            am_resp r;
            memcpy(&r, p, sizeof r);
            if (s->kind != KIND_AMV || r.status != MPI_SUCCESS || !r.packed) {
                p += resp_whole(s, &r);
                continue;
            }
            memcpy(b->resp + kept, keep, (size_t)(p - keep));
            kept += (size_t)(p - keep);
            p += unpack_one(w, s, p);
            s->delivered = 1;
            keep = p;
        }
        memcpy(b->resp + kept, keep, (size_t)(p - keep));
    }
    __atomic_store_n(&b->answered, 1, __ATOMIC_RELEASE); /* read without the lock: am_wait_answer */
    return 1;
}

/* Waits for the oldest batch to `target`, serving AMs meanwhile, and delivers it. */
void am_retire_oldest(am_win *w, int target)
{
    am_batch *b = w->head[target];
    if (!b->posted) {
        am_wait_answer(w, b);
        if (b->answered < 0) /* the oldest ANSWER from target left to matching is this one */
            PMPI_Irecv(b->resp, (int)b->resp_cap, MPI_BYTE, target, TAG_ANSWER, w->comm, &b->req[1]);
    }
    am_wait(2, b->req);
    const char *p = b->resp;
    for (int i = 0; i < b->n; i++) {
        if (!b->slot[i].delivered) p += unpack_one(w, &b->slot[i], p);
        am_credit_return(w, target, b->slot[i].staged);
    }
    w->head[target] = b->next;
    if (!w->head[target]) w->tail[target] = NULL;
    w->inflight[target]--;
    batch_recycle(w, b);
}

/* Retires the oldest batches to target whose responses are here, without
 * waiting; returns how many. */
int am_retire_answered(am_win *w, int target)
{
    int n = 0;
    am_drain(w);
    for (am_batch *b; (b = w->head[target]); n++) {
        int here = 0;
        if (b->posted) PMPI_Test(&b->req[1], &here, MPI_STATUS_IGNORE);
        else here = __atomic_load_n(&b->answered, __ATOMIC_ACQUIRE) > 0;
        if (!here) break;
        am_retire_oldest(w, target);
    }
    return n;
}

int am_complete(am_win *w, int target)
{
    int lo = target == MPI_ANY_SOURCE ? 0 : target, hi = target == MPI_ANY_SOURCE ? w->size : target + 1;
    for (int t = lo; t < hi; t++) am_send_open(w, t);
    for (int t = lo; t < hi; t++)
        while (w->head[t]) am_retire_oldest(w, t);
    int e = w->error;
    w->error = MPI_SUCCESS;
    if (e == MPI_ERR_OP)
        return am_fail(e, "an AM named a handler of the other kind (MPIX_Am needs MPIX_Am_op_create, "
                          "MPIX_Amv needs MPIX_Amv_op_create) or one the target never registered");
    if (e == MPI_ERR_COUNT)
        return am_fail(e, "an MPIX_Amv handler set an output_segment_counts entry outside 0 .. the output "
                          "segment count");
    if (e == MPI_ERR_BUFFER)
        return am_fail(e, "an AM segment was larger than the target's system buffer and every attached buffer "
                          "(attach one with MPIX_Am_win_buffer_attach)");
    if (e == MPI_ERR_RMA_RANGE)
        return am_fail(e, "an AM's target location lay outside every region attached to the target's dynamic "
                          "window (MPI_Win_attach); its handler did not run");
    if (e != MPI_SUCCESS) { /* what a handler returned: its AM's output is not written */
        char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 96];
        int len = 0;
        if (PMPI_Error_string(e, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "not an MPI error code");
        snprintf(msg, sizeof msg, "an AM handler returned %d (%s) at its target; that AM's output is not written", e,
                 text);
        return am_fail(e, msg);
    }
    return e;
}

/* Appends one pipeline unit (h->nseg segments) to the target's open batch; it,
 * ot: in_type's and out_type's am_type_index. */
static void queue(am_win *w, const am_hdr *h, int kind, const void *in, int in_count, MPI_Datatype in_type, int it,
                  void *out, int out_count, MPI_Datatype out_type, int ot, int *counts, int target, long long staged,
                  long long user)
{
    size_t in_total = (size_t)h->in_bytes * (size_t)h->nseg, out_total = (size_t)h->out_bytes * (size_t)h->nseg;
    size_t need = sizeof *h + AM_PAD(in_total), resp_need = sizeof(am_resp) + AM_PAD(out_total);
    if (kind == KIND_AMV) resp_need += AM_PAD(sizeof(int) * (size_t)h->nseg);
    am_batch *b = w->open[target];
    /* both directions stay under BATCH_BYTES (eager sizes), unless one AM alone is larger */
    if (b && (b->send_len + need > BATCH_BYTES || b->resp_len + resp_need > BATCH_BYTES || b->n == BATCH_AMS))
        am_send_open(w, target);
    while (w->inflight[target] >= MAX_INFLIGHT) am_retire_oldest(w, target); /* flow control */
    if (!w->open[target]) w->open[target] = batch_new(w, target);
    b = w->open[target];
    b->user += user;
    b->send = am_grow(b->send, &b->send_cap, b->send_len + need, 1);
    memcpy(b->send + b->send_len, h, sizeof *h);
    char *dst = b->send + b->send_len + sizeof *h;
    if (it >= 0) {
        if (in_total) memcpy(dst, in, in_total);
    } else {
        int pos = 0;
        PMPI_Pack(in, in_count * h->nseg, in_type, dst, (int)in_total, &pos, w->comm);
    }
    b->send_len += need;
    if (b->n == b->slot_cap) {
        size_t cap = (size_t)b->slot_cap;
        b->slot = am_grow(b->slot, &cap, (size_t)b->n + 1, sizeof *b->slot);
        b->slot_cap = (int)cap;
    }
    b->slot[b->n++] = (am_slot){ out, counts, kind, h->nseg, h->out_bytes, out_count, ot, out_type, staged, 0 };
    b->amv |= kind == KIND_AMV;
    b->resp_len += resp_need;
    if (b->send_len >= BATCH_BYTES || b->resp_len >= BATCH_BYTES || b->n == BATCH_AMS) am_send_open(w, target);
}

/* MPIX_Am(v) on w, w's calls held (issue). */
static int issue_on(am_win *w, int kind, const void *in, int in_count, MPI_Datatype in_type, void *out,
                    int out_count, MPI_Datatype out_type, int *counts, int nseg, int target, MPI_Aint disp,
                    int pcount, MPI_Datatype ptype, MPIX_Am_op op)
{
    const char *fn = kind == KIND_AM ? "MPIX_Am" : "MPIX_Amv";
    char msg[320];
    if (target < 0 || target >= w->size) {
        snprintf(msg, sizeof msg, "%s: target rank %d out of range; valid ranks are 0 .. %d", fn, target,
                 w->size - 1);
        return am_fail(MPI_ERR_RANK, msg);
    }
    if (op < 0 || op >= am_nops || am_ops[op].kind != kind) {
        snprintf(msg, sizeof msg, "%s: handler %d unknown or of the other kind (register it with %s)", fn, op,
                 kind == KIND_AM ? "MPIX_Am_op_create" : "MPIX_Amv_op_create");
        return am_fail(MPI_ERR_OP, msg);
    }
    if (nseg < 1 || in_count < 0 || out_count < 0 || pcount < 0 || (kind == KIND_AMV && !counts)) {
        snprintf(msg, sizeof msg, "%s: num_segments must be >= 1, counts >= 0%s", fn,
                 kind == KIND_AMV ? ", output_segment_counts not NULL" : "");
        return am_fail(MPI_ERR_COUNT, msg);
    }
    if (!w->fence_open && !w->access[target]) {
        snprintf(msg, sizeof msg, "%s: outside an epoch (open one with MPI_Win_fence, MPI_Win_lock, "
                 "MPI_Win_lock_all or MPI_Win_start)", fn);
        return am_fail(MPI_ERR_RMA_SYNC, msg);
    }
    /* one scan of the table where the three types are one (2.5% of an origin's time for small AMs) */
    const int it = am_type_index(in_type), ot = out_type == in_type ? it : am_type_index(out_type),
              pt = ptype == in_type ? it : ptype == out_type ? ot : am_type_index(ptype);
    if (kind == KIND_AMV && ot < 0)
        return am_fail(MPI_ERR_TYPE, "MPIX_Amv: the output datatype must be a predefined type (e.g. MPI_BYTE, "
                                     "MPI_CHAR, MPI_INT, MPI_DOUBLE)");
    int isz = type_size(in_type, it), osz = type_size(out_type, ot), psz = type_size(ptype, pt);
    int in_bytes, out_bytes, p_bytes; /* per segment; the wire carries ints */
    if (__builtin_mul_overflow(in_count, isz, &in_bytes) || __builtin_mul_overflow(out_count, osz, &out_bytes) ||
        __builtin_mul_overflow(pcount, psz, &p_bytes)) {
        snprintf(msg, sizeof msg, "%s: an input or output segment or the persistent data is 2 GiB or more "
                 "(at most INT_MAX bytes each)", fn);
        return am_fail(MPI_ERR_COUNT, msg);
    }
    int rc = am_range_check(w, fn, target, disp, p_bytes);
    if (rc != MPI_SUCCESS) return rc;
    am_hdr h = { op, nseg, it < 0 ? 0 : it, ot < 0 ? 0 : ot, pt < 0 ? 0 : pt,
                 it < 0 ? in_bytes : in_count, ot < 0 ? out_bytes : out_count,
                 pt < 0 ? p_bytes : pcount, in_bytes, out_bytes, w->pack_threshold, disp };

    /* Pipeline units: as many segments as fit the system buffer (at least one).
     * A derived type is packed or unpacked whole, so its AM is one unit. */
    size_t seg_stage = (size_t)h.in_bytes + (size_t)h.out_bytes;
    int unit = it < 0 || ot < 0 || !seg_stage ? nseg : (int)(SYSTEM_BUF_BYTES / seg_stage);
    unit = unit < 1 ? 1 : unit > nseg ? nseg : unit;
    for (int s0 = 0; s0 < nseg && rc == MPI_SUCCESS; s0 += unit) {
        h.nseg = nseg - s0 < unit ? nseg - s0 : unit;
        const long long stage = (long long)(seg_stage * (size_t)h.nseg);
        long long user;
        rc = am_credit_acquire(w, target, stage, &user);
        if (rc == MPI_SUCCESS)
            queue(w, &h, kind, (const char *)in + (size_t)s0 * (size_t)h.in_bytes, in_count, in_type, it,
                  (char *)out + (size_t)s0 * (size_t)h.out_bytes, out_count, out_type, ot, counts ? counts + s0 : NULL,
                  target, stage - user, user);
    }
    /* space reserved for these AMs alone goes now: waiting in the open batch
     * while the application is elsewhere, it could hold up another origin */
    if (w->open[target] && w->open[target]->user) am_send_open(w, target);
    if (rc == MPI_ERR_BUFFER) {
        if (unit == 1)
            snprintf(msg, sizeof msg, "%s: a segment of %zu bytes (input + output) is larger than the system buffer "
                     "(%d) and every user buffer at rank %d (attach one with MPIX_Am_win_buffer_attach)", fn,
                     seg_stage, SYSTEM_BUF_BYTES, target);
        else /* a derived type's AM: the unit is all of it */
            snprintf(msg, sizeof msg, "%s: an AM with a derived datatype goes whole, and its %d segments of %zu bytes "
                     "(input + output) are more than the system buffer (%d) or any user buffer at rank %d holds "
                     "(attach a larger one with MPIX_Am_win_buffer_attach, or send fewer segments per AM)", fn, unit,
                     seg_stage, SYSTEM_BUF_BYTES, target);
        return am_fail(rc, msg);
    }
    return rc;
}

static int issue(int kind, const void *in, int in_count, MPI_Datatype in_type, void *out, int out_count,
                 MPI_Datatype out_type, int *counts, int nseg, int target, MPI_Aint disp, int pcount,
                 MPI_Datatype ptype, MPIX_Am_op op, MPI_Win win)
{
    am_win *w = am_state(win);
    if (!w) return am_unknown_window(kind == KIND_AM ? "MPIX_Am" : "MPIX_Amv");
    if (target == MPI_PROC_NULL) return MPI_SUCCESS; /* as an RMA operation to it: no effect */
    am_win_enter(w);
    int rc = issue_on(w, kind, in, in_count, in_type, out, out_count, out_type, counts, nseg, target, disp, pcount,
                      ptype, op);
    am_win_leave(w);
    return rc;
}

int MPIX_Am(const void *in, int in_count, MPI_Datatype in_type, void *out, int out_count,
            MPI_Datatype out_type, int nseg, int target, MPI_Aint disp, int pcount,
            MPI_Datatype ptype, MPIX_Am_op op, MPI_Win win)
{
    return issue(KIND_AM, in, in_count, in_type, out, out_count, out_type, NULL, nseg, target, disp, pcount,
                 ptype, op, win);
}

int MPIX_Amv(const void *in, int in_count, MPI_Datatype in_type, void *out, int out_count,
             MPI_Datatype out_type, int counts[], int nseg, int target, MPI_Aint disp, int pcount,
             MPI_Datatype ptype, MPIX_Am_op op, MPI_Win win)
{
    return issue(KIND_AMV, in, in_count, in_type, out, out_count, out_type, counts, nseg, target, disp, pcount,
                 ptype, op, win);
}

/* libmpix_am internals shared by the origin side (mpix_am.c), the target side
 * (am_target.c) and the epoch wrappers (am_epoch.c). */
#ifndef AM_INTERNAL_H
#define AM_INTERNAL_H
#include "mpix_am.h"
#include "ompi/mca/pml/ubermatch/pml_ubermatch_am_hooks.h"
#include <pthread.h>
#include <stddef.h>

/* TAG_RESP answers a batch whose origin posted a receive for it, TAG_ANSWER one
 * whose origin takes it at arrival (pml/ubermatch's hook, am_take_answer). */
enum { TAG_REQ = 1, TAG_RESP = 2, TAG_RSV = 3, TAG_GRANT = 4, TAG_ANSWER = 5, MAX_OPS = 64, MAX_BUFS = 16 };
/* Per-origin system buffer at every target: a segment (input + output bytes)
 * larger than this needs an attached user buffer. */
enum { SYSTEM_BUF_BYTES = 8192 }; /* the paper's 8 KB per peer */
/* AMs to one target are coalesced into batches of up to this many bytes (each
 * way) or AMs; at most MAX_INFLIGHT batches per target wait for their response.
 * 8000 B keeps a batch within pml/ubermatch's shared-memory rings (8 KiB records):
 * 32 KiB batches went through UCX and gave 8x fewer 16-segment AMs per second. */
enum { BATCH_BYTES = 8000, BATCH_AMS = 512, MAX_INFLIGHT = 16, TX_UNTESTED = 8 };
enum { KIND_AM = 0, KIND_AMV = 1 };

/* Wire: a batch is a batch_hdr, then per AM an am_hdr and its input bytes.
 * Every part is padded to 8 bytes so that handlers see aligned segments. */
#define AM_PAD(n) (((size_t)(n) + 7u) & ~(size_t)7u)
/* user: bytes of the target's user buffers reserved for this batch alone (a
 * shared epoch's reservations, am_credit.c), given back by the target once it
 * has run the batch. */
typedef struct { int nams, fence, resp_tag, pad; long long user; } batch_hdr;
typedef struct {
    int op, nseg;
    int in_type, out_type, p_type;  /* index in the predefined-type table, 0 = MPI_BYTE */
    int in_count, out_count, pcount; /* per segment (in/out), elements of that type */
    int in_bytes, out_bytes;         /* per segment */
    float pack_threshold;            /* MPIX_Amv: pack when generated share < this (1.0: always) */
    MPI_Aint disp;
} am_hdr;
/* The response to a batch, per AM: am_resp; unless an error: MPIX_Am: the output
 * segments; MPIX_Amv: int counts[nseg] (elements), then the output, packed (the
 * counted elements only) or whole (every segment at its fixed offset). */
typedef struct { int status, packed; } am_resp;

/* A packed MPIX_Amv output, as the target packs and the origin unpacks it, in
 * runs of segments whose all but last are whole (contiguous both at their fixed
 * offsets and packed, so moved or copied at once): whether segment g ends one. */
static inline int am_run_ends(const int *counts, int g, int nseg, int out_count)
{
    return counts[g] != out_count || g + 1 == nseg;
}

typedef struct {           /* an AM whose output is still to come */
    void *out;
    int *counts;           /* MPIX_Amv: the origin's output_segment_counts */
    int kind, nseg, out_bytes, out_count, packed_type;
    MPI_Datatype out_type; /* used when packed_type < 0: a derived type, unpacked */
    long long staged;      /* its staging bytes in the origin's own space at the target, given back when it completes */
    int delivered;         /* its output was copied out at arrival (am_take_answer) */
} am_slot;

typedef struct am_batch {
    MPI_Request req[2]; /* send of the batch, receive of its response (when posted) */
    char *send, *resp;
    size_t send_len, send_cap, resp_len, resp_cap;
    am_slot *slot;
    int n, slot_cap, target, fence;
    int amv;            /* it holds an MPIX_Amv (whose output may come packed) */
    long long user;     /* the batch_hdr's user: reserved for this batch's AMs alone */
    int posted;         /* 1: req[1] receives the response; 0: taken at arrival (am_take_answer) */
    int answered;       /* taken: 1 copied into resp, -1 left to matching (rendezvous); set with release */
    struct am_batch *next;
} am_batch;

typedef struct am_rx {     /* a request or reservation taken at arrival (or a response deferred) */
    int source, tag, here; /* here = 0: its payload was not offered (rendezvous): receive it */
    char *buf;
    size_t len, cap;
    struct am_rx *next;
} am_rx;

typedef struct am_tx {     /* a response being sent by the target */
    MPI_Request req;
    char *buf;
    size_t cap;
    struct am_tx *next;
} am_tx;

typedef struct am_region {  /* memory attached to a dynamic window (MPI_Win_attach) */
    MPI_Aint addr, len;
    struct am_region *next;
} am_region;

typedef struct am_win {
    MPI_Comm comm;
    MPI_Group group;
    int *started, nstarted;       /* PSCW: the access epoch's targets */
    int rank, size, fence_open, *access, *issued, served_fence;
    char *base;
    int disp_unit;
    /* where AMs may reach (am_range.c): every rank's window bytes and displacement
     * unit, learnt at creation (bytes -1: a dynamic window), and mine attached */
    MPI_Aint *win_bytes;
    int *win_unit;
    am_region *regions;
    float pack_threshold;
    unsigned char amv_packed[MAX_OPS]; /* per handler: its last MPIX_Amv served here was packed (am_target.c) */
    void *buf[MAX_BUFS];
    int buf_size[MAX_BUFS], nbuf;
    am_batch **open;              /* per target: the batch being filled */
    am_batch **head, **tail;      /* per target: sent batches, oldest first */
    am_batch *spare;              /* retired batches, buffers kept for reuse */
    int *inflight;
    am_tx *tx, *tx_free;          /* responses in flight, spare response buffers */
    int ntx;                      /* responses in flight (tx) */
    char *rx;
    size_t rx_cap;
    int error;                    /* first error reported back by a target */
    /* buffer reservation (am_credit.c): origin side per target, then target side */
    long long *granted, *staged, *hint;
    int *excl, *holds_all, interleave_detach;
    long long user_total, user_reserved;
    long handshakes;
    double sync_seconds;
    /* taken = 1: pml/ubermatch offers us every message on comm at arrival
     * (pml_ubermatch_am_hooks.h): requests and reservations wait in the inbox,
     * in arrival order, and nothing is probed; 0: probe (another PML). */
    int taken;
    am_rx *inbox, *inbox_tail, *rx_free;
    /* MPI_THREAD_MULTIPLE (am_thread.c): calls on this window one at a time;
     * arrivals the hook took, waiting for the library's lock */
    pthread_mutex_t calls, deferred_lock;
    am_rx *deferred, *deferred_tail;
    int has_deferred;
    struct am_win *next;          /* list of windows served from progress */
} am_win;

typedef struct { int kind; void *fn; } am_op_entry;
extern am_op_entry am_ops[MAX_OPS];
extern int am_nops;
extern am_win *am_windows;
/* threads (am_thread.c) */
extern int am_mt; /* MPI_THREAD_MULTIPLE: the locks below are taken (read through am_threaded) */
static inline int am_threaded(void)
{
    return __atomic_load_n(&am_mt, __ATOMIC_RELAXED);
}
extern __thread int am_busy __attribute__((tls_model("initial-exec"))); /* this thread is inside the library */
void am_threads_init(void);    /* decides am_mt: before the first window */
void am_lock_take(void);       /* the library's lock itself (am_thread.c) */
void am_lock_give(void);
int am_lock_try(void);
/* The library's lock, nested: counted in am_busy, taken at the outermost. Inline:
 * the progress hook tries it at every opal_progress. */
static inline void am_enter(void)
{
    if (am_busy++ == 0 && am_threaded()) am_lock_take();
}
static inline void am_leave(void)
{
    if (--am_busy == 0 && am_threaded()) am_lock_give();
}
/* 0: this thread is inside already, or another holds the lock */
static inline int am_try_enter(void)
{
    if (am_busy || (am_threaded() && !am_lock_try())) return 0;
    am_busy = 1;
    return 1;
}
int am_release(void);          /* lets the lock go around a wait; returns what am_reacquire takes */
void am_reacquire(int busy);
/* A call on w: w's own lock, then the library's. */
static inline void am_win_enter(am_win *w)
{
    if (am_threaded()) pthread_mutex_lock(&w->calls);
    am_enter();
}
static inline void am_win_leave(am_win *w)
{
    am_leave();
    if (am_threaded()) pthread_mutex_unlock(&w->calls);
}
void am_idle(void);            /* one round of a wait: progress without the lock, then serve */
am_rx *am_rx_get(am_win *w);
void am_rx_put(am_win *w, am_rx *r);
int am_defer(am_win *w, int source, int tag, const void *data, size_t len); /* the hook, threaded */
void am_drain_deferred(am_win *w);
/* The deferred arrivals on (under the library's lock); inline: the progress hook
 * looks at every window at every opal_progress. */
static inline void am_drain(am_win *w)
{
    if (am_threaded() && __atomic_load_n(&w->has_deferred, __ATOMIC_ACQUIRE)) am_drain_deferred(w);
}
void am_win_locks_init(am_win *w);
void am_win_locks_destroy(am_win *w);

int am_fail(int code, const char *msg);
int am_type_index(MPI_Datatype t); /* predefined type -> index > 0, else -1 */
MPI_Datatype am_type_of(int index);
int am_type_bytes(int index);      /* the size of am_type_of(index) */
void *am_grow(void *p, size_t *cap, size_t need, size_t elem);
int am_fits(const am_win *w, int bytes);
am_win *am_state(MPI_Win win); /* NULL: a window this library does not know */
/* fn's error for such a window, saying why it is not known. */
int am_unknown_window(const char *fn);

/* where a target location may lie (am_range.c) */
void am_range_setup(am_win *w, MPI_Win win); /* collective over w->comm */
void am_range_free(am_win *w);
int am_range_check(const am_win *w, const char *fn, int target, MPI_Aint disp, MPI_Aint span); /* origin */
void *am_persistent(const am_win *w, const am_hdr *h); /* target: NULL when outside what it may reach */

/* origin side */
int am_complete(am_win *w, int target);  /* MPI_ANY_SOURCE: every target */
void am_send_open(am_win *w, int target);
void am_batches_free(am_win *w);
void am_retire_oldest(am_win *w, int target);
int am_retire_answered(am_win *w, int target); /* those whose responses are here; no wait */
int am_credit_acquire(am_win *w, int target, long long bytes, long long *user);
void am_credit_return(am_win *w, int target, long long bytes);
void am_credit_sync(am_win *w, int target, int epoch_ends);
void am_credit_lock(am_win *w, int target, int exclusive);
void am_credit_serve(am_win *w, int source, const void *msg);
int am_take_answer(am_win *w, int source, const void *data, size_t len);
/* target side */
int am_serve_one(am_win *w);
int am_serve_any(void); /* every window; returns how many it served */
void am_wait(int n, MPI_Request *r); /* serving meanwhile */
void am_wait_answer(am_win *w, am_batch *b); /* until a taken response arrived, serving meanwhile */
void am_tx_drain(am_win *w);
void am_progress_attach(am_win *w); /* collective over w->comm */
void am_progress_detach(am_win *w);
int am_progress_hooked(void); /* 1: AMs are served from Open MPI's progress */
void am_opal_progress(void);  /* one opal_progress (only where hooked) */
#endif

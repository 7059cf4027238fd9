/* The library under MPI_THREAD_MULTIPLE.  Every piece of its state (windows,
 * batches, inboxes, reservations, handlers) is touched under one lock, held by
 * a thread only while it works inside the library, never while it waits: a
 * waiting thread lets the lock go around each MPI call that progresses, so
 * that other threads' calls, and the progress hook in any thread, serve AMs
 * meanwhile.  Calls on one window are serialized by a lock of that window
 * (taken first, held through the call and its waits): a flush and an AM on one
 * window from two threads at once queue, as MPI's own calls may.  The PML's
 * arrival hook runs inside the PML's lock, which a thread holding ours may be
 * waiting for: it takes neither, and leaves each arrival in the window's
 * deferred list (a lock of its own, held for a copy), which the next holder
 * of the library's lock moves on (am_drain).  At lower thread levels none of
 * these locks is taken: one thread at a time is in MPI, and am_busy alone
 * keeps the progress hook out of the library's own MPI calls. */
#include "am_internal.h"
#include <sched.h>
#include <stdlib.h>
#include <string.h>

int am_mt;
__thread int am_busy __attribute__((tls_model("initial-exec")));
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void decide(void)
{
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    /* atomic: the progress hook may read it in a thread that never passed here,
     * the hook's registration (after this) published through Open MPI */
    __atomic_store_n(&am_mt, level == MPI_THREAD_MULTIPLE, __ATOMIC_RELAXED);
}

void am_threads_init(void)
{
    pthread_once(&once, decide);
}

void am_lock_take(void)
{
    pthread_mutex_lock(&lock);
}

void am_lock_give(void)
{
    pthread_mutex_unlock(&lock);
}

int am_lock_try(void)
{
    return pthread_mutex_trylock(&lock) == 0;
}

int am_release(void)
{
    int busy = am_busy;
    if (busy && am_threaded()) am_lock_give();
    am_busy = 0;
    return busy;
}

void am_reacquire(int busy)
{
    if (busy && am_threaded()) am_lock_take();
    am_busy = busy;
}

/* One round of a wait inside the library: MPI progresses without our lock
 * (serving AMs through the progress hook where there is one; else another
 * thread may take the lock meanwhile), then what arrived is served. */
void am_idle(void)
{
    int busy = am_release();
    if (am_progress_hooked()) am_opal_progress();
    else if (am_threaded()) sched_yield();
    am_reacquire(busy);
    am_serve_any();
}

/* A request record from the window's spare list (the hook's and the lock
 * holder's, under the deferred list's lock at MPI_THREAD_MULTIPLE). */
am_rx *am_rx_get(am_win *w)
{
    if (am_threaded()) pthread_mutex_lock(&w->deferred_lock);
    am_rx *r = w->rx_free;
    if (r) w->rx_free = r->next;
    if (am_threaded()) pthread_mutex_unlock(&w->deferred_lock);
    if (!r && !(r = calloc(1, sizeof *r))) abort();
    return r;
}

void am_rx_put(am_win *w, am_rx *r)
{
    if (am_threaded()) pthread_mutex_lock(&w->deferred_lock);
    r->next = w->rx_free;
    w->rx_free = r;
    if (am_threaded()) pthread_mutex_unlock(&w->deferred_lock);
}

/* The arrival hook at MPI_THREAD_MULTIPLE: what the library takes at arrival
 * (requests, reservations, taken responses) is copied into the deferred list,
 * in arrival order; a rendezvous one is a place holder, left to matching. */
int am_defer(am_win *w, int source, int tag, const void *data, size_t len)
{
    if (tag != TAG_REQ && tag != TAG_RSV && tag != TAG_ANSWER) return 0;
    const int here = data != NULL; /* r is not ours to read once in the list */
    am_rx *r = am_rx_get(w);
    r->source = source;
    r->tag = tag;
    r->here = here;
    r->len = len;
    if (data) {
        r->buf = am_grow(r->buf, &r->cap, len, 1);
        memcpy(r->buf, data, len);
    }
    r->next = NULL;
    pthread_mutex_lock(&w->deferred_lock);
    if (w->deferred_tail) w->deferred_tail->next = r;
    else w->deferred = r;
    w->deferred_tail = r;
    __atomic_store_n(&w->has_deferred, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->deferred_lock);
    return here;
}

/* Under the library's lock: the deferred arrivals, oldest first, go where the
 * hook puts them at lower thread levels (the inbox, or their batch). */
void am_drain_deferred(am_win *w)
{
    pthread_mutex_lock(&w->deferred_lock);
    am_rx *r = w->deferred;
    w->deferred = w->deferred_tail = NULL;
    __atomic_store_n(&w->has_deferred, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->deferred_lock);
    while (r) {
        am_rx *next = r->next;
        r->next = NULL;
        if (r->tag == TAG_ANSWER) {
            am_take_answer(w, r->source, r->here ? r->buf : NULL, r->len);
            am_rx_put(w, r);
        } else {
            if (w->inbox_tail) w->inbox_tail->next = r;
            else w->inbox = r;
            w->inbox_tail = r;
        }
        r = next;
    }
}

void am_win_locks_init(am_win *w)
{
    pthread_mutex_init(&w->calls, NULL);
    pthread_mutex_init(&w->deferred_lock, NULL);
}

void am_win_locks_destroy(am_win *w)
{
    pthread_mutex_destroy(&w->calls);
    pthread_mutex_destroy(&w->deferred_lock);
}

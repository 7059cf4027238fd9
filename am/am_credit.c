/* Buffer reservation (the paper's Sections III-A and IV-A/B): an origin may have
 * SYSTEM_BUF_BYTES of AM staging (input + output bytes) outstanding at a target
 * in its exclusive system buffer, plus the bytes the window's hint
 * am_user_buf_<rank> guarantees; beyond that it reserves space in the target's
 * attached user buffers with a handshake (a round trip) before the AM goes.
 * In a shared epoch (the paper's base) such a reservation is for the AMs it
 * was made for: the target takes it back once it has run them, so that an
 * origin waiting elsewhere (in a barrier before its unlock) never holds space
 * another origin needs; kept until the epoch's end, it hung such programs
 * (test_am.c, shared_space). Under an exclusive lock the origin reserves every
 * free byte once (when its system buffer is first full: AMs that fit it need
 * no message, and Open MPI's lock is not ours to piggyback on), gives it back
 * at the epoch's end and, unless am_buf_interleave_am_detach = false, at
 * each flush. */
#include "am_internal.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { RESERVE, RESERVE_ALL, RELEASE };
typedef struct { long long bytes; int kind, pad; } rsv_msg; /* RESERVE_ALL: every free byte */
typedef struct { long long granted, total; } grant_msg;

/* Target: answers a reservation message (received by am_serve_one). */
void am_credit_serve(am_win *w, int source, const void *msg)
{
    rsv_msg r;
    memcpy(&r, msg, sizeof r);
    if (r.kind == RELEASE) {
        w->user_reserved -= r.bytes;
        return;
    }
    long long free_bytes = w->user_total - w->user_reserved;
    grant_msg g = { 0, w->user_total };
    if (r.kind == RESERVE_ALL) g.granted = free_bytes;
    else if (r.bytes <= free_bytes) g.granted = r.bytes; /* all or nothing: no two origins hold halves */
    w->user_reserved += g.granted;
    PMPI_Send(&g, (int)sizeof g, MPI_BYTE, source, TAG_GRANT, w->comm);
}

/* Origin: one reservation round trip, serving meanwhile; returns what was granted. */
static grant_msg handshake(am_win *w, int target, int kind, long long bytes)
{
    double t0 = PMPI_Wtime();
    rsv_msg r = { bytes, kind, 0 };
    grant_msg g;
    MPI_Request req;
    PMPI_Irecv(&g, (int)sizeof g, MPI_BYTE, target, TAG_GRANT, w->comm, &req);
    PMPI_Send(&r, (int)sizeof r, MPI_BYTE, target, TAG_RSV, w->comm);
    /* the exclusive lock's one reservation, as the paper's sent ahead of its
     * AMs: the batch it would otherwise hold back goes behind it, and the target
     * runs that while the answer travels */
    if (kind == RESERVE_ALL) am_send_open(w, target);
    am_wait(1, &req);
    w->handshakes++;
    w->sync_seconds += PMPI_Wtime() - t0;
    return g;
}

static long long room(const am_win *w, int t)
{
    return SYSTEM_BUF_BYTES + w->hint[t] + w->granted[t] - w->staged[t];
}

/* Makes room for a pipeline unit's staging bytes at t. In a shared epoch: the
 * space its answered AMs give back, else a reservation for this unit alone
 * (*user: its bytes, which travel with the unit's batch), waiting for AMs in
 * flight, ours or other origins', while the user buffers are full. Under an
 * exclusive lock: every free byte of the user buffers once, then its own AMs
 * in flight. */
int am_credit_acquire(am_win *w, int t, long long bytes, long long *user)
{
    *user = 0;
    while (room(w, t) < bytes) {
        if (!w->excl[t] && w->head[t] && am_retire_answered(w, t)) continue;
        if (!w->holds_all[t]) {
            const long long need = bytes - (room(w, t) > 0 ? room(w, t) : 0);
            grant_msg g = handshake(w, t, w->excl[t] ? RESERVE_ALL : RESERVE, need);
            if (w->excl[t]) { /* kept (and given back at the synchronization) even if this unit is refused */
                w->granted[t] += g.granted;
                w->holds_all[t] = 1;
            }
            /* too large for every buffer: a shared reservation is then never granted */
            if (bytes > SYSTEM_BUF_BYTES + w->hint[t] + g.total) return MPI_ERR_BUFFER;
            if (w->excl[t]) continue;
            if (g.granted) {
                *user = need;
                bytes -= need;
                break;
            }
        }
        if (w->open[t] || w->head[t]) {
            am_send_open(w, t);
            am_retire_oldest(w, t);
            continue;
        }
        w->holds_all[t] = 0; /* nothing in flight: other origins may have given space back */
        am_idle();
    }
    w->staged[t] += bytes;
    return MPI_SUCCESS;
}

void am_credit_return(am_win *w, int t, long long bytes)
{
    w->staged[t] -= bytes;
}

/* At a synchronization of target t's epoch: give the reservation back, except an
 * exclusive lock's across a flush when the window promises no detach in between. */
void am_credit_sync(am_win *w, int t, int epoch_ends)
{
    if (!epoch_ends && w->excl[t] && !w->interleave_detach) return;
    w->holds_all[t] = 0;
    if (!w->granted[t]) return;
    double t0 = PMPI_Wtime();
    rsv_msg r = { w->granted[t], RELEASE, 0 };
    PMPI_Send(&r, (int)sizeof r, MPI_BYTE, t, TAG_RSV, w->comm);
    w->granted[t] = 0;
    w->sync_seconds += PMPI_Wtime() - t0;
}

void am_credit_lock(am_win *w, int t, int exclusive)
{
    w->excl[t] = exclusive; /* the one reservation is made when the system buffer is first full */
}

/* Where an AM's target persistent location may lie. Its handler gets a pointer
 * into the target's memory, so a location outside what the window exposes would
 * be a write anywhere in that process. A window of fixed size (MPI_Win_create,
 * _allocate, _allocate_shared) is checked by the origin, before the AM goes:
 * every rank learns every rank's size and displacement unit at creation. A
 * dynamic window's regions (MPI_Win_attach) are known only to the target, which
 * checks there and refuses; the origin's completing call then returns
 * MPI_ERR_RMA_RANGE. The target checks fixed windows too (a handler never runs on
 * memory it was not given), at the cost of a few compares per AM. */
#include "am_internal.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void am_range_setup(am_win *w, MPI_Win win)
{
    int flag = 0, *flavor = NULL;
    MPI_Aint *bytes = NULL, mine[2];
    PMPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    PMPI_Win_get_attr(win, MPI_WIN_SIZE, &bytes, &flag);
    mine[0] = flag && !(flavor && *flavor == MPI_WIN_FLAVOR_DYNAMIC) ? *bytes : -1;
    mine[1] = w->disp_unit;
    MPI_Aint *all = malloc(sizeof(MPI_Aint) * 2 * (size_t)w->size);
    w->win_bytes = malloc(sizeof(MPI_Aint) * (size_t)w->size);
    w->win_unit = malloc(sizeof(int) * (size_t)w->size);
    if (!all || !w->win_bytes || !w->win_unit) abort();
    PMPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, w->comm);
    for (int r = 0; r < w->size; r++) {
        w->win_bytes[r] = all[2 * r];
        w->win_unit[r] = (int)all[2 * r + 1];
    }
    free(all);
}

void am_range_free(am_win *w)
{
    free(w->win_bytes);
    free(w->win_unit);
    for (am_region *r = w->regions, *n; r; r = n) {
        n = r->next;
        free(r);
    }
}

/* The byte offset of disp in units of unit, if it and span bytes from it lie
 * within bytes; -1 if not (overflow included). */
static MPI_Aint offset_within(MPI_Aint disp, int unit, MPI_Aint span, MPI_Aint bytes)
{
    MPI_Aint off;
    if (disp < 0 || span < 0 || __builtin_mul_overflow(disp, (MPI_Aint)unit, &off)) return -1;
    return off <= bytes && span <= bytes - off ? off : -1;
}

/* Whether [addr, addr + span) lies within one region attached to w. */
static int attached(const am_win *w, MPI_Aint addr, MPI_Aint span)
{
    for (const am_region *r = w->regions; r; r = r->next)
        if (span >= 0 && addr >= r->addr && addr - r->addr <= r->len && span <= r->len - (addr - r->addr)) return 1;
    return 0;
}

int am_range_check(const am_win *w, const char *fn, int target, MPI_Aint disp, MPI_Aint span)
{
    const MPI_Aint bytes = w->win_bytes[target];
    if (bytes < 0 || offset_within(disp, w->win_unit[target], span, bytes) >= 0) return MPI_SUCCESS;
    char msg[320];
    snprintf(msg, sizeof msg, "%s: the target location (displacement %ld in units of %d bytes, %ld bytes of "
             "persistent data) lies outside rank %d's window of %ld bytes; nothing was sent", fn, (long)disp,
             w->win_unit[target], (long)span, target, (long)bytes);
    return am_fail(MPI_ERR_RMA_RANGE, msg);
}

void *am_persistent(const am_win *w, const am_hdr *h)
{
    const MPI_Aint span = (MPI_Aint)h->pcount * am_type_bytes(h->p_type), bytes = w->win_bytes[w->rank];
    if (bytes < 0) /* dynamic: the displacement is an address (the window's base is MPI_BOTTOM) */
        return attached(w, h->disp, span) ? (void *)(uintptr_t)h->disp : NULL;
    const MPI_Aint off = offset_within(h->disp, w->disp_unit, span, bytes);
    return off < 0 ? NULL : w->base + off;
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    int rc = PMPI_Win_attach(win, base, size);
    am_win *w = am_state(win);
    if (w && rc == MPI_SUCCESS) {
        am_region *r = malloc(sizeof *r);
        if (!r) abort();
        am_enter(); /* targets read the regions while serving */
        *r = (am_region){ (MPI_Aint)(uintptr_t)base, size, w->regions };
        w->regions = r;
        am_leave();
    }
    return rc;
}

int MPI_Win_detach(MPI_Win win, const void *base)
{
    int rc = PMPI_Win_detach(win, base);
    am_win *w = am_state(win);
    if (w && rc == MPI_SUCCESS) {
        am_enter();
        for (am_region **p = &w->regions; *p; p = &(*p)->next)
            if ((*p)->addr == (MPI_Aint)(uintptr_t)base) {
                am_region *r = *p;
                *p = r->next;
                free(r);
                break;
            }
        am_leave();
    }
    return rc;
}

/*
 * pml/ubermatch's side of coll/ubermatch: the hooks it calls around every
 * collective, what they record per communicator, and the hints of collective
 * messages drawn from that.
 *
 * Which hint a collective message (negative tag) gets, in this order:
 *  1. a tag in Open MPI's nonblocking range that a recent nonblocking call
 *     reserved (coll/ubermatch reports the tags each call took from the
 *     communicator's c_nbc_tag): that call's collective and sizes. Exact for
 *     libnbc and adapt, which take their tags there, also when the message is
 *     sent or received long after the call returned, from the progress engine,
 *     or while another collective runs on the communicator. Approximate in
 *     that the last PML_UM_COLL_RANGES calls per communicator are remembered
 *     (the messages of an older one still outstanding fall through to 2 or
 *     3), and that libnbc's intercommunicator schedules exchange some messages
 *     on the local group's communicator, where their tag is unknown (3:
 *     "other"). The persistent MPIX_*_init collectives, which coll/ubermatch
 *     does not wrap, also fall through to 3;
 *  2. while a call is open on the communicator: the outermost open call's;
 *  3. else the tag's own (mca_pml_ubermatch_hint: Open MPI's blocking tags name
 *     their collective, the others are UM_COLL_OTHER), and the message's size.
 * Received messages are matched with the hint their sender gave them (the
 * collective travels in the wire header).
 *
 * Nesting: the outermost call wins. A collective built from others (allreduce
 * as reduce + bcast in some algorithms, the calls on the sub-communicators of
 * hierarchical modules are on other communicators and so outermost there) is
 * one call of the application's collective, with the application's message
 * size: that is the bucket the col engines profile (the paper's per-call
 * profile), and it is what every rank sees whatever algorithm the module below
 * picked. Inner calls only count in nested_calls.
 *
 * The engine hears of blocking calls only (um_proto_collective: its
 * collective_begin/end). A nonblocking call returns before its traffic ends and
 * nothing tells the PML when it completes, so its messages get the call's hint
 * (rule 1) but the engine keeps its own call boundaries for them.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include <stdio.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/proc/proc.h"
#include "opal/mca/base/mca_base_var.h"

static mca_pml_ubermatch_comm_t *comm_state(struct ompi_communicator_t *comm)
{
    return (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
}

static void hint_of(const mca_pml_ubermatch_coll_call_t *call, um_hint_t *hint)
{
    hint->coll = (uint16_t) call->coll;
    hint->reserved = 0;
    hint->msg_size = call->msg_size > UINT32_MAX ? UINT32_MAX : (uint32_t) call->msg_size;
    hint->comm_size = call->comm_size > 0 ? (uint32_t) call->comm_size : 0;
}

static bool valid_call(const mca_pml_ubermatch_coll_call_t *call)
{
    return call->coll > UM_COLL_NONE && call->coll < UM_COLL_COUNT;
}

static void tell_engine(struct ompi_communicator_t *comm, mca_pml_ubermatch_comm_t *c,
                        const um_hint_t *hint, int begin)
{
    if (UM_PROTO_OK != um_proto_collective(mca_pml_ubermatch.proto, c->proto, hint, begin)) {
        PML_UM_VERBOSE(1, "%s: the engine refused collective_%s of %s", comm->c_name,
                       begin ? "begin" : "end", um_coll_name((um_coll_t) hint->coll));
    }
}

static void collective_begin(struct ompi_communicator_t *comm,
                             const mca_pml_ubermatch_coll_call_t *call)
{
    mca_pml_ubermatch_comm_t *c = comm_state(comm);
    const bool blocking = !(call->flags & MCA_PML_UBERMATCH_COLL_NONBLOCKING);
    bool outermost;
    um_hint_t hint;

    if (NULL == c || !valid_call(call)) {
        return;
    }
    hint_of(call, &hint);
    OPAL_THREAD_LOCK(&c->coll.lock);
    outermost = 0 == c->coll.depth++;
    if (outermost) {
        c->coll.call = hint;
        c->coll.engine_call = blocking;
        ++c->coll.calls;
        c->coll.nonblocking_calls += !blocking;
    } else {
        ++c->coll.nested_calls;
    }
    OPAL_THREAD_UNLOCK(&c->coll.lock);

    if (blocking) {
        PML_UM_VERBOSE(3, "%s (cid %u): %s%s begins: %zu bytes, %d processes", comm->c_name,
                       comm->c_contextid, um_coll_name(call->coll),
                       outermost ? "" : " (nested)", call->msg_size, call->comm_size);
    }
    if (outermost && blocking) {
        tell_engine(comm, c, &hint, 1);
    }
}

static void collective_end(struct ompi_communicator_t *comm,
                           const mca_pml_ubermatch_coll_call_t *call)
{
    mca_pml_ubermatch_comm_t *c = comm_state(comm);
    const bool nonblocking = call->flags & MCA_PML_UBERMATCH_COLL_NONBLOCKING;
    bool close_engine_call = false;
    um_hint_t outer;

    if (NULL == c || !valid_call(call)) {
        return;
    }
    OPAL_THREAD_LOCK(&c->coll.lock);
    if (0 == c->coll.depth) { /* unpaired: nothing to close */
        OPAL_THREAD_UNLOCK(&c->coll.lock);
        return;
    }
    outer = c->coll.call;
    if (nonblocking && call->tag_low <= call->tag_high) {
        unsigned i = c->coll.next_range;
        c->coll.ranges[i].low = call->tag_low;
        c->coll.ranges[i].high = call->tag_high;
        c->coll.ranges[i].hint = outer; /* this call's own hint unless it is nested */
        c->coll.next_range = (i + 1) % PML_UM_COLL_RANGES;
    }
    if (0 == --c->coll.depth) {
        close_engine_call = c->coll.engine_call;
    }
    OPAL_THREAD_UNLOCK(&c->coll.lock);

    if (nonblocking) {
        PML_UM_VERBOSE(3, "%s (cid %u): i%s started: %zu bytes, %d processes, tags %d..%d",
                       comm->c_name, comm->c_contextid, um_coll_name(call->coll),
                       call->msg_size, call->comm_size, call->tag_high, call->tag_low);
    }
    if (close_engine_call) {
        tell_engine(comm, c, &outer, 0);
    }
}

int mca_pml_ubermatch_register_coll_hooks(void)
{
    static const mca_pml_ubermatch_coll_hooks_t hooks = {
        .version = MCA_PML_UBERMATCH_COLL_HOOKS_VERSION,
        .collective_begin = collective_begin,
        .collective_end = collective_end,
    };
    return mca_pml_ubermatch_publish_hooks(
        MCA_PML_UBERMATCH_COLL_HOOKS_VAR,
        "Address of the hooks coll/ubermatch calls around collectives (internal)", &hooks);
}

void mca_pml_ubermatch_coll_construct(mca_pml_ubermatch_coll_state_t *state)
{
    memset(state, 0, sizeof(*state));
    OBJ_CONSTRUCT(&state->lock, opal_mutex_t);
    for (unsigned i = 0; i < PML_UM_COLL_RANGES; ++i) {
        state->ranges[i].low = 1; /* empty: low > high */
        state->ranges[i].high = 0;
    }
}

void mca_pml_ubermatch_coll_destruct(mca_pml_ubermatch_coll_state_t *state)
{
    OBJ_DESTRUCT(&state->lock);
}

static bool nonblocking_tag(int tag)
{
    return tag <= MCA_COLL_BASE_TAG_NONBLOCKING_BASE && tag >= MCA_COLL_BASE_TAG_NONBLOCKING_END;
}

bool mca_pml_ubermatch_coll_hint(struct ompi_communicator_t *comm, int tag, um_hint_t *hint)
{
    mca_pml_ubermatch_comm_t *c = comm_state(comm);
    bool found = false;

    if (NULL == c) {
        return false;
    }
    OPAL_THREAD_LOCK(&c->coll.lock);
    if (nonblocking_tag(tag)) {
        /* newest first: a range is forgotten only when PML_UM_COLL_RANGES newer ones exist */
        for (unsigned k = 1; k <= PML_UM_COLL_RANGES && !found; ++k) {
            unsigned i = (c->coll.next_range + PML_UM_COLL_RANGES - k) % PML_UM_COLL_RANGES;
            if (tag >= c->coll.ranges[i].low && tag <= c->coll.ranges[i].high) {
                *hint = c->coll.ranges[i].hint;
                ++c->coll.by_range;
                found = true;
            }
        }
    }
    if (!found && c->coll.depth > 0) {
        *hint = c->coll.call;
        ++c->coll.by_call;
        found = true;
    }
    if (!found) {
        ++c->coll.by_tag;
    }
    OPAL_THREAD_UNLOCK(&c->coll.lock);
    return found;
}

void mca_pml_ubermatch_coll_print_stats(struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_comm_t *c = comm_state(comm);
    const mca_pml_ubermatch_coll_state_t *s;

    if (NULL == c) {
        return;
    }
    s = &c->coll;
    if (0 == s->calls && 0 == s->by_tag) {
        return;
    }
    fprintf(stderr,
            "[ubermatch] rank %u, %s (cid %u): coll/ubermatch reported %llu calls (%llu "
            "nonblocking, %llu nested); collective messages hinted by the open call %llu, by a "
            "nonblocking call's tags %llu, by their tag alone %llu\n",
            (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name, comm->c_contextid,
            (unsigned long long) s->calls,
            (unsigned long long) s->nonblocking_calls, (unsigned long long) s->nested_calls,
            (unsigned long long) s->by_call, (unsigned long long) s->by_range,
            (unsigned long long) s->by_tag);
}

/*
 * coll/ubermatch: a collective component that adds no algorithm of its own.
 * On every communicator it sits above the modules Open MPI selected (highest
 * priority, enabled last), keeps their functions and forwards every blocking,
 * nonblocking and neighbourhood collective to them unchanged, telling
 * pml/ubermatch before and after each call which collective runs, with which
 * message size and communicator size (pml_ubermatch_coll_hooks.h). The PML
 * gives that to its matching engine: the hint of every message of the call,
 * and the call's boundaries. It is active only under pml/ubermatch.
 *
 * Message size of a call: the bytes of one process's block, as the arguments
 * significant at this rank give it: count x type size for bcast, reduce,
 * allreduce, scan, exscan, reduce_scatter_block; the block sent to or received
 * from each process for gather, scatter, allgather, alltoall and the
 * neighbourhood allgather/alltoall; the average block for the v and w
 * variants and reduce_scatter; 0 for barrier, the neighbourhood v and w
 * variants (their neighbour count is the topology's) and processes outside
 * the root's group of an intercommunicator call (MPI_PROC_NULL).
 */
#ifndef MCA_COLL_UBERMATCH_H
#define MCA_COLL_UBERMATCH_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

typedef struct mca_coll_ubermatch_component {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int output;
    /* pml/ubermatch's hooks; NULL: another PML runs, the component is not available */
    const mca_pml_ubermatch_coll_hooks_t *hooks;
} mca_coll_ubermatch_component_t;

extern mca_coll_ubermatch_component_t mca_coll_ubermatch_component;

/* One per communicator. */
typedef struct mca_coll_ubermatch_module {
    mca_coll_base_module_t super;
    /* What the modules below provide, saved in enable (retained) and
     * released on disable or destruction: every call goes there. */
    mca_coll_base_comm_coll_t below;
} mca_coll_ubermatch_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ubermatch_module_t);

mca_coll_base_module_t *mca_coll_ubermatch_module_new(void);

/* Each family file sets the module's functions of its family. */
void mca_coll_ubermatch_set_blocking(mca_coll_base_module_t *module);
void mca_coll_ubermatch_set_nonblocking(mca_coll_base_module_t *module);
void mca_coll_ubermatch_set_neighbor(mca_coll_base_module_t *module);

/* --- what the wrappers tell the PML --- */

/* The processes this one exchanges with. */
static inline int mca_coll_ubermatch_peers(struct ompi_communicator_t *comm)
{
    return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
}

static inline size_t mca_coll_ubermatch_bytes(int count, struct ompi_datatype_t *dtype)
{
    size_t size = 0;
    if (count <= 0 || NULL == dtype) {
        return 0;
    }
    ompi_datatype_type_size(dtype, &size);
    return (size_t) count * size;
}

/* The average of n blocks counts[i] x dtype. */
static inline size_t mca_coll_ubermatch_bytes_v(const int *counts, int n,
                                                struct ompi_datatype_t *dtype)
{
    size_t total = 0;
    if (NULL == counts || n <= 0) {
        return 0;
    }
    for (int i = 0; i < n; ++i) {
        total += mca_coll_ubermatch_bytes(counts[i], dtype);
    }
    return total / (size_t) n;
}

/* Which arguments of a rooted call are significant here. */
typedef enum { UM_SIDE_ROOT, UM_SIDE_LEAF, UM_SIDE_NONE } mca_coll_ubermatch_side_t;

static inline mca_coll_ubermatch_side_t mca_coll_ubermatch_side(struct ompi_communicator_t *comm,
                                                                int root)
{
    if (OMPI_COMM_IS_INTER(comm)) {
        return MPI_ROOT == root ? UM_SIDE_ROOT
                                : MPI_PROC_NULL == root ? UM_SIDE_NONE : UM_SIDE_LEAF;
    }
    return root == ompi_comm_rank(comm) ? UM_SIDE_ROOT : UM_SIDE_LEAF;
}

/* The block of one process in a rooted call: at_root at the root, elsewhere at
 * the others, 0 in an intercommunicator's group without the root. Only the
 * expression of this side is evaluated: the other side's arguments may be
 * anything (MPI ignores them). */
#define UM_ROOTED(comm, root, at_root, elsewhere)                                  \
    (UM_SIDE_ROOT == mca_coll_ubermatch_side((comm), (root))   ? (at_root)         \
     : UM_SIDE_LEAF == mca_coll_ubermatch_side((comm), (root)) ? (elsewhere)       \
                                                               : (size_t) 0)

/* alltoallw: the average of the blocks received. */
static inline size_t mca_coll_ubermatch_bytes_w(const int *counts,
                                                struct ompi_datatype_t *const *dtypes, int n)
{
    size_t total = 0;
    if (NULL == counts || NULL == dtypes || n <= 0) {
        return 0;
    }
    for (int i = 0; i < n; ++i) {
        total += mca_coll_ubermatch_bytes(counts[i], dtypes[i]);
    }
    return total / (size_t) n;
}

static inline void mca_coll_ubermatch_begin(mca_pml_ubermatch_coll_call_t *call,
                                            struct ompi_communicator_t *comm, um_coll_t coll,
                                            size_t msg_size, unsigned flags)
{
    call->coll = coll;
    call->flags = flags;
    call->msg_size = msg_size;
    call->comm_size = mca_coll_ubermatch_peers(comm);
    /* The next tag a nonblocking collective reserves is at most this one
     * (ompi_coll_base_nbc_reserve_tags counts down from c_nbc_tag). */
    call->tag_high = comm->c_nbc_tag;
    call->tag_low = call->tag_high + 1; /* none yet */
    mca_coll_ubermatch_component.hooks->collective_begin(comm, call);
}

static inline void mca_coll_ubermatch_end(mca_pml_ubermatch_coll_call_t *call,
                                          struct ompi_communicator_t *comm)
{
    if (call->flags & MCA_PML_UBERMATCH_COLL_NONBLOCKING) {
        const int before = call->tag_high, after = comm->c_nbc_tag;
        if (after != before) {
            /* Reserved: (after, before], or (after, BASE] when the counter wrapped. */
            call->tag_low = after + 1;
            call->tag_high = after < before ? before : MCA_COLL_BASE_TAG_NONBLOCKING_BASE;
        }
    }
    mca_coll_ubermatch_component.hooks->collective_end(comm, call);
}

/* The frame of every wrapper: tell the PML, forward the call (its arguments
 * up to the module) to the module below, tell the PML, return the result. */
#define UM_FORWARD(fn, coll, msg_size, flags, ...)                                         \
    do {                                                                                   \
        mca_coll_ubermatch_module_t *um_self = (mca_coll_ubermatch_module_t *) module;     \
        mca_pml_ubermatch_coll_call_t um_call;                                             \
        int um_rc;                                                                         \
        mca_coll_ubermatch_begin(&um_call, comm, (coll), (msg_size), (flags));             \
        um_rc = um_self->below.coll_##fn(__VA_ARGS__, um_self->below.coll_##fn##_module);  \
        mca_coll_ubermatch_end(&um_call, comm);                                            \
        return um_rc;                                                                      \
    } while (0)

END_C_DECLS

#endif /* MCA_COLL_UBERMATCH_H */

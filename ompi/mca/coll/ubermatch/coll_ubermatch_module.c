/*
 * coll/ubermatch module: one per communicator. enable() saves (and retains)
 * the functions the modules below put in the communicator's table, for the
 * wrappers to forward to; disable() gives them back.
 */
#include "ompi/mca/coll/ubermatch/coll_ubermatch.h"

#include <string.h>

#include "opal/util/output.h"

/* Every function coll/ubermatch forwards. The persistent ones (MPIX_*_init)
 * and reduce_local (no communication) stay with the modules below. */
#define UM_FORWARDED(X)                                                                          \
    X(allgather) X(allgatherv) X(allreduce) X(alltoall) X(alltoallv) X(alltoallw) X(barrier)     \
    X(bcast) X(exscan) X(gather) X(gatherv) X(reduce) X(reduce_scatter) X(reduce_scatter_block)  \
    X(scan) X(scatter) X(scatterv)                                                               \
    X(iallgather) X(iallgatherv) X(iallreduce) X(ialltoall) X(ialltoallv) X(ialltoallw)          \
    X(ibarrier) X(ibcast) X(iexscan) X(igather) X(igatherv) X(ireduce) X(ireduce_scatter)        \
    X(ireduce_scatter_block) X(iscan) X(iscatter) X(iscatterv)                                   \
    X(neighbor_allgather) X(neighbor_allgatherv) X(neighbor_alltoall) X(neighbor_alltoallv)      \
    X(neighbor_alltoallw)                                                                        \
    X(ineighbor_allgather) X(ineighbor_allgatherv) X(ineighbor_alltoall) X(ineighbor_alltoallv)  \
    X(ineighbor_alltoallw)

/* Modules are enabled from the lowest priority up, so the table holds what
 * the modules below chose. A function nobody below provides (exscan and scan
 * on an intercommunicator) is not taken over: its slot stays empty. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_ubermatch_module_t *m = (mca_coll_ubermatch_module_t *) module;
    const mca_coll_base_comm_coll_t *table = comm->c_coll;
    int forwarded = 0;

#define UM_SAVE(fn)                                                                              \
    if (NULL != table->coll_##fn && NULL != table->coll_##fn##_module) {                         \
        m->below.coll_##fn = table->coll_##fn;                                                   \
        m->below.coll_##fn##_module = table->coll_##fn##_module;                                 \
        OBJ_RETAIN(m->below.coll_##fn##_module);                                                 \
        ++forwarded;                                                                             \
    } else {                                                                                     \
        m->super.coll_##fn = NULL;                                                               \
    }
    UM_FORWARDED(UM_SAVE)
#undef UM_SAVE

    opal_output_verbose(2, mca_coll_ubermatch_component.output,
                        "coll_ubermatch: %s (cid %u, size %d): forwarding %d functions",
                        comm->c_name, comm->c_contextid, mca_coll_ubermatch_peers(comm),
                        forwarded);
    return OMPI_SUCCESS;
}

/* Gives back the saved functions. With comm (disable), the modules below are
 * disabled too, as the framework would have done for their slots had we not
 * taken them over; the framework calls this once per slot of ours, and
 * after the first call nothing is left to do. */
static void release_below(mca_coll_ubermatch_module_t *m, struct ompi_communicator_t *comm)
{
#define UM_RELEASE(fn)                                                                           \
    if (NULL != m->below.coll_##fn##_module) {                                                   \
        mca_coll_base_module_t *below = m->below.coll_##fn##_module;                             \
        m->below.coll_##fn = NULL;                                                               \
        m->below.coll_##fn##_module = NULL;                                                      \
        if (NULL != comm && NULL != below->coll_module_disable) {                                \
            below->coll_module_disable(below, comm);                                             \
        }                                                                                        \
        OBJ_RELEASE(below);                                                                      \
    }
    UM_FORWARDED(UM_RELEASE)
#undef UM_RELEASE
}

static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    release_below((mca_coll_ubermatch_module_t *) module, comm);
    return OMPI_SUCCESS;
}

static void module_construct(mca_coll_ubermatch_module_t *m)
{
    memset(&m->below, 0, sizeof(m->below));
}

static void module_destruct(mca_coll_ubermatch_module_t *m)
{
    release_below(m, NULL); /* when never disabled (a failed selection) */
}

OBJ_CLASS_INSTANCE(mca_coll_ubermatch_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

mca_coll_base_module_t *mca_coll_ubermatch_module_new(void)
{
    mca_coll_ubermatch_module_t *m = OBJ_NEW(mca_coll_ubermatch_module_t);
    if (NULL == m) {
        return NULL;
    }
    m->super.coll_module_enable = module_enable;
    m->super.coll_module_disable = module_disable;
    mca_coll_ubermatch_set_blocking(&m->super);
    mca_coll_ubermatch_set_nonblocking(&m->super);
    mca_coll_ubermatch_set_neighbor(&m->super);
    return &m->super;
}

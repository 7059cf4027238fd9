/*
 * MPI_T performance variables of pml/ubermatch: one value per communicator,
 * read from its matching engine's statistics, and the process's requests.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include <stddef.h>

#include "opal/mca/base/mca_base_pvar.h"

typedef struct {
    const char *name;
    const char *help;
    int var_class;
} pvar_def_t;

/* In the order of pvar_value()'s switch. */
static const pvar_def_t pvars[] = {
    {"posted_length", "Receives queued in the communicator's posted queue", MPI_T_PVAR_CLASS_SIZE},
    {"unexpected_length", "Messages queued in the communicator's unexpected queue",
     MPI_T_PVAR_CLASS_SIZE},
    {"posted_max", "Longest the posted queue has been", MPI_T_PVAR_CLASS_HIGHWATERMARK},
    {"unexpected_max", "Longest the unexpected queue has been", MPI_T_PVAR_CLASS_HIGHWATERMARK},
    {"searches", "Queue searches (receives posted, messages arrived, probes)",
     MPI_T_PVAR_CLASS_COUNTER},
    {"matches", "Searches that found their element", MPI_T_PVAR_CLASS_COUNTER},
    {"search_inspected", "Queue elements inspected by all searches (total search depth)",
     MPI_T_PVAR_CLASS_COUNTER},
    {"search_max", "Elements inspected by the deepest single search",
     MPI_T_PVAR_CLASS_HIGHWATERMARK},
    {"queues", "Queues the matching engine has allocated", MPI_T_PVAR_CLASS_SIZE},
    {"bytes", "Bytes held by the matching engine's structures", MPI_T_PVAR_CLASS_SIZE},
    {"false_positives", "fuzzy* engines: fast-key hits refuted by the full (source, tag)",
     MPI_T_PVAR_CLASS_COUNTER},
    {"blocks", "vector and fuzzy* engines: blocks of both queues", MPI_T_PVAR_CLASS_SIZE},
    {"holes", "vector and fuzzy* engines: slots of removed elements not yet given back",
     MPI_T_PVAR_CLASS_SIZE},
    {"compactions", "vector and fuzzy* engines: hole compactions", MPI_T_PVAR_CLASS_COUNTER},
    /* Per class of traffic, and the engine's timers (MCA pml_ubermatch_timers; 0 without). */
    {"p2p_searches", "Queue searches for point-to-point traffic", MPI_T_PVAR_CLASS_COUNTER},
    {"coll_searches", "Queue searches for collective traffic", MPI_T_PVAR_CLASS_COUNTER},
    {"p2p_inspected", "Queue elements inspected by point-to-point searches",
     MPI_T_PVAR_CLASS_COUNTER},
    {"coll_inspected", "Queue elements inspected by collective searches",
     MPI_T_PVAR_CLASS_COUNTER},
    {"p2p_search_ns", "With pml_ubermatch_timers: nanoseconds of point-to-point searches",
     MPI_T_PVAR_CLASS_COUNTER},
    {"coll_search_ns", "With pml_ubermatch_timers: nanoseconds of collective searches",
     MPI_T_PVAR_CLASS_COUNTER},
    {"p2p_posted_search_ns",
     "With pml_ubermatch_timers: of p2p_search_ns, the searches of the posted-receive queue",
     MPI_T_PVAR_CLASS_COUNTER},
    {"coll_posted_search_ns",
     "With pml_ubermatch_timers: of coll_search_ns, the searches of the posted-receive queue",
     MPI_T_PVAR_CLASS_COUNTER},
    {"overhead_ns",
     "With pml_ubermatch_timers: nanoseconds restructuring queues (partners, levels)",
     MPI_T_PVAR_CLASS_COUNTER},
    {"timer_outliers",
     "With pml_ubermatch_timers: intervals left out for passing pml_ubermatch_timer_cutoff_ns",
     MPI_T_PVAR_CLASS_COUNTER},
    {"dedicated_p2p_queues", "pnp, colpnp, list+pnp: dedicated point-to-point (PNP) queues",
     MPI_T_PVAR_CLASS_SIZE},
    {"dedicated_coll_queues", "col, colpnp, col+list: dedicated collective (COL) queues",
     MPI_T_PVAR_CLASS_SIZE},
    /* From the communicator's info assertions (pml_ubermatch_assert.c), not the engine's stats. */
    {"relaxed", "Assertions the communicator's engine relies on: 1 mpi_assert_no_any_source, 2 "
     "mpi_assert_no_any_tag, 4 ubermatch_no_unexpected, 8 mpi_assert_allow_overtaking; 0: full "
     "matching",
     MPI_T_PVAR_CLASS_GENERIC},
    {"unexpected_refused", "Arrivals that found no receive under ubermatch_no_unexpected (the "
     "communicator keeps unexpected messages from the first on)", MPI_T_PVAR_CLASS_COUNTER},
};
#define PVAR_FIRST_INFO 26 /* pvars[] from here are read by pvar_info() */

static unsigned long long pvar_info(size_t which, const um_proto_comm_info_t *info)
{
    return PVAR_FIRST_INFO == which ? info->relaxed : info->refused;
}

static unsigned long long pvar_value(size_t which, const um_stats_t *s)
{
    switch (which) {
    case 0: return s->posted_len;
    case 1: return s->unexpected_len;
    case 2: return s->posted_max;
    case 3: return s->unexpected_max;
    case 4: return s->p2p.searches + s->coll.searches;
    case 5: return s->p2p.matches + s->coll.matches;
    case 6: return s->p2p.inspected + s->coll.inspected;
    case 7: return s->p2p.max_inspected > s->coll.max_inspected ? s->p2p.max_inspected
                                                                : s->coll.max_inspected;
    case 8: return s->queues;
    case 9: return s->bytes;
    case 10: return s->false_positives;
    case 11: return s->blocks;
    case 12: return s->holes;
    case 13: return s->compactions;
    case 14: return s->p2p.searches;
    case 15: return s->coll.searches;
    case 16: return s->p2p.inspected;
    case 17: return s->coll.inspected;
    case 18: return s->p2p.search_ns;
    case 19: return s->coll.search_ns;
    case 20: return s->p2p.posted_search_ns;
    case 21: return s->coll.posted_search_ns;
    case 22: return s->overhead_ns;
    case 23: return s->timer_outliers;
    case 24: return s->dedicated_p2p;
    default: return s->dedicated_coll; /* 25 */
    }
}

static int get_value(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    struct ompi_communicator_t *comm = (struct ompi_communicator_t *) obj_handle;
    const size_t which = (size_t) (uintptr_t) pvar->ctx;
    um_stats_t s;
    um_proto_comm_info_t info;

    if (NULL == mca_pml_ubermatch.proto || NULL == comm || NULL == mca_pml_ubermatch_comm(comm)) {
        *(unsigned long long *) value = 0;
        return OMPI_SUCCESS;
    }
    if (which >= PVAR_FIRST_INFO) {
        um_proto_comm_info(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &info);
        *(unsigned long long *) value = pvar_info(which, &info);
        return OMPI_SUCCESS;
    }
    um_proto_comm_stats(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &s);
    *(unsigned long long *) value = pvar_value(which, &s);
    return OMPI_SUCCESS;
}

static int notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event, void *obj_handle,
                  int *count)
{
    (void) pvar;
    (void) obj_handle;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = 1; /* one value for the whole communicator */
    }
    return OMPI_SUCCESS;
}

/* Requests the process has allocated: each is reused once released, so this
 * grows only with the operations pending at once (and the threads' caches). */
static int get_requests(const struct mca_base_pvar_t *pvar, void *value, void *obj_handle)
{
    (void) pvar;
    (void) obj_handle;
    *(unsigned long long *) value = mca_pml_ubermatch.proto != NULL
                                        ? (unsigned long long) mca_pml_ubermatch.requests.fl_num_allocated
                                        : 0;
    return OMPI_SUCCESS;
}

int mca_pml_ubermatch_register_pvars(void)
{
    int rc = mca_base_component_pvar_register(
        &mca_pml_ubermatch_component.pmlm_version, "requests",
        "Requests the process has allocated (each reused once released: grows with the "
        "operations pending at once)",
        OPAL_INFO_LVL_4, MPI_T_PVAR_CLASS_SIZE, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MPI_T_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        get_requests, NULL, NULL, NULL);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < sizeof(pvars) / sizeof(pvars[0]); ++i) {
        rc = mca_base_component_pvar_register(
            &mca_pml_ubermatch_component.pmlm_version, pvars[i].name, pvars[i].help,
            OPAL_INFO_LVL_4, pvars[i].var_class, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
            MPI_T_BIND_MPI_COMM, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            get_value, NULL, notify, (void *) (uintptr_t) i);
        if (rc < 0) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

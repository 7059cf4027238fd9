/*
 * pml/ubermatch: MPI point-to-point over UCX active messages, matched by the
 * ubermatch engine. This C glue touches Open MPI's objects (requests,
 * communicators, convertors, MCA variables, pvars); the protocol and the
 * matching live in C++ behind protocol/um_protocol.h.
 */
#ifndef PML_UBERMATCH_H
#define PML_UBERMATCH_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/threads/mutex.h"
#include "opal/util/output.h"

#include "ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h"
#include "ompi/mca/pml/ubermatch/protocol/um_protocol.h"

BEGIN_C_DECLS

/* Settings, from MCA variables. */
typedef struct mca_pml_ubermatch_config {
    int priority;
    char *backend;      /* name of the engine backend */
    int bins;           /* engine parameter of `bins` */
    char *kernel;       /* SIMD kernel of vector/fuzzy*: auto, avx512, avx2, scalar */
    double compact_threshold; /* vector/fuzzy*: hole fraction that compacts a queue */
    int theta;          /* pnp: queue length that makes partners */
    int k_c;            /* col: at most k_c * sqrt(n) collective queues */
    int k_p;            /* pnp: at most k_p * sqrt(n) partner queues */
    int index_at;       /* auto: a search this deep indexes its queue */
    int list_at;        /* auto: an indexed queue this short is a list again */
    int index_rent;     /* auto: deep compares, in list lengths, before a queue is indexed */
    size_t max_index_bytes; /* auto: bytes of the indices per communicator */
    bool timers;        /* the engine times its searches and restructuring */
    unsigned long long timer_cutoff_ns; /* timed intervals longer than this are left out */
    char *kernel_detected; /* read-only: what "auto" picks on this CPU */
    int verbose;
    bool print_stats;   /* one line of engine statistics per communicator, when freed */
    char *ucx_tls;      /* UCX_TLS for our worker; NULL: UCX's default */
    char *ucx_rndv_thresh;
    unsigned inject_alloc_failure; /* tests: every n-th message-path allocation fails */
    size_t shm_eager_limit; /* largest message through a shared-memory ring; 0: none */
    bool shm_pull;          /* receivers read large messages from their senders (CMA) */
    size_t shm_stage_max;   /* contiguous pulls up to this size copied into shared memory */
    bool hwloc;             /* ring sizes from the cache hierarchy (protocol/topology.h) */
    char *trace;        /* directory of the matching trace (replay/); empty: off */
    const char *trace_direct; /* how the trace is written: false, true (direct I/O), auto */
    char *assertions;   /* honour or ignore communicators' info assertions */
    char *shm_pack_stage; /* "measure", "always" or "never" (um_proto_config_t) */
    char *threading;    /* MPI_THREAD_MULTIPLE matching: "global" (one lock) or "tailq" */
    int tailq_bins;     /* with tailq: bins of each communicator's tail queues, 1 .. 256 */
    unsigned int max_contextid; /* communicators at once (context ids), 64 .. PML_UM_MAX_CONTEXTID */
} mca_pml_ubermatch_config_t;

/* The wire carries 32 bits of context id; Open MPI's search stops below the maximum. */
#define PML_UM_MAX_CONTEXTID (UINT32_MAX - 1)
/* pml_ubermatch_shm_stage_max's range besides 0: from the smallest pull to the arena's size. */
#define PML_UM_STAGE_MIN 12288
#define PML_UM_STAGE_MAX (64 << 20)

typedef struct mca_pml_ubermatch_module {
    mca_pml_base_module_t super;
    mca_pml_ubermatch_config_t config;
    um_proto_t *proto;
    opal_free_list_t requests;
    /* What MPI_Isend returns for a send that completed inside the call: one
     * request, always complete, that MPI_Wait and MPI_Request_free leave alone. */
    ompi_request_t completed_send;
    opal_mutex_t connect_lock; /* one endpoint per peer, also with threads */
    int output;                /* opal_output stream for verbose messages */
    uint32_t assert_mask;      /* the assertions honoured (PML_UM_ASSERT_*); 0: ignore */
} mca_pml_ubermatch_module_t;

extern mca_pml_base_component_2_0_0_t mca_pml_ubermatch_component;
extern mca_pml_ubermatch_module_t mca_pml_ubermatch;

#define PML_UM_VERBOSE(level, ...)                                                   \
    do {                                                                             \
        if (mca_pml_ubermatch.config.verbose >= (level)) {                           \
            opal_output(mca_pml_ubermatch.output, "pml_ubermatch: " __VA_ARGS__);     \
        }                                                                            \
    } while (0)

/* Tag ranges of a communicator's latest nonblocking collectives, kept for their hints. */
#define PML_UM_COLL_RANGES 32

/* What coll/ubermatch told us about a communicator's collectives
 * (pml_ubermatch_coll.c). */
typedef struct mca_pml_ubermatch_coll_state {
    opal_mutex_t lock; /* with threads: libnbc progresses from any thread */
    int depth;         /* calls open now, nested ones included */
    um_hint_t call;    /* the outermost open call, the hint of every collective message meanwhile */
    bool engine_call;  /* it is blocking: the engine was told where it begins and ends */
    struct {
        int32_t low, high; /* tags [low, high] */
        um_hint_t hint;    /* the nonblocking call that reserved them */
    } ranges[PML_UM_COLL_RANGES];
    unsigned next_range; /* the oldest, overwritten next */
    /* For print_stats: outermost calls reported, nonblocking ones, nested calls; the
     * collective messages (sends, receives, probes) whose hint came from the open call,
     * from a nonblocking call's tags, or from the tag alone. */
    uint64_t calls, nonblocking_calls, nested_calls;
    uint64_t by_call, by_range, by_tag;
} mca_pml_ubermatch_coll_state_t;

/* The PML's state of a communicator (comm->c_pml_comm). */
typedef struct mca_pml_ubermatch_comm {
    um_proto_comm_t *proto;
    mca_pml_ubermatch_coll_state_t coll;
    uint32_t own_asserts; /* our own info keys (PML_UM_ASSERT_NO_UNEXPECTED) */
    uint32_t applied;     /* the assertions its engine was chosen for */
} mca_pml_ubermatch_comm_t;

/* Info assertions (pml_ubermatch_assert.c): Open MPI's bits in c_assertions
 * (OMPI_COMM_ASSERT_*, set or cleared for the keys a PML subscribes to; 4.1.4 never
 * initialises the other bits) and ours above them. */
#define PML_UM_ASSERT_OMPI                                                                 \
    (OMPI_COMM_ASSERT_NO_ANY_TAG | OMPI_COMM_ASSERT_NO_ANY_SOURCE |                       \
     OMPI_COMM_ASSERT_EXACT_LENGTH | OMPI_COMM_ASSERT_ALLOW_OVERTAKE)
#define PML_UM_ASSERT_NO_UNEXPECTED 0x100u
#define PML_UM_ASSERT_ALL (PML_UM_ASSERT_OMPI | PML_UM_ASSERT_NO_UNEXPECTED)

int mca_pml_ubermatch_assert_register(void);
int mca_pml_ubermatch_assert_init(void); /* checks pml_ubermatch_assertions */
/* add_comm: subscribes to the keys; the engine backend the communicator's info asks for (NULL:
 * the configured one). */
const char *mca_pml_ubermatch_assert_add_comm(struct ompi_communicator_t *comm);
int mca_pml_ubermatch_assert_slow(struct ompi_communicator_t *comm, int src, int tag,
                                  uint32_t now);
/* A receive or probe the communicator's engine refused (UM_PROTO_ASSERTION): says why
 * (rate-limited, as the assertions' refusals) and returns MPI_ERR_RANK or MPI_ERR_TAG. */
int mca_pml_ubermatch_assert_refused(struct ompi_communicator_t *comm, int src);
/* A receive's or probe's protocol status other than UM_PROTO_OK as its MPI error. */
static inline int mca_pml_ubermatch_recv_error(struct ompi_communicator_t *comm, int src, int rc)
{
    return UM_PROTO_ASSERTION == rc ? mca_pml_ubermatch_assert_refused(comm, src) : OMPI_ERROR;
}

/* The assertions a communicator's engine follows now: Open MPI's bits, ours, as
 * pml_ubermatch_assertions lets them (each receive compares it with c->applied). */
static inline uint32_t mca_pml_ubermatch_assertions(const struct ompi_communicator_t *comm,
                                                    const mca_pml_ubermatch_comm_t *c)
{
    return ((comm->c_assertions & PML_UM_ASSERT_OMPI) | c->own_asserts) &
           mca_pml_ubermatch.assert_mask;
}

/* Every receive and probe: a wildcard the communicator's assertions rule out is
 * an error (MPI_ERR_RANK, MPI_ERR_TAG), and after MPI_Comm_set_info the engine
 * follows the assertions. Open MPI's own traffic (tags below MPI_ANY_TAG) is not
 * bound by them. Inline, and straight-line for a communicator with assertions as
 * for one without (a wildcard masks the assertions in): with "no assertions" as
 * the likely branch, each receive on a relaxed communicator jumped out of line
 * and back, 4-12% of its depth-0 rate (docs/relaxed.md, 2026-12-03). */
static inline int mca_pml_ubermatch_assert_recv(struct ompi_communicator_t *comm, int src,
                                                int tag)
{
    mca_pml_ubermatch_comm_t *c = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    const uint32_t now = mca_pml_ubermatch_assertions(comm, c);
    const uint32_t wild = (uint32_t) ((MPI_ANY_SOURCE == src) | (MPI_ANY_TAG == tag));
    if (OPAL_LIKELY(now == c->applied) && OPAL_LIKELY(0 == (now & (0u - wild)))) {
        return OMPI_SUCCESS;
    }
    return mca_pml_ubermatch_assert_slow(comm, src, tag, now);
}

/* The protocol's state of a communicator; NULL before add_comm and after del_comm. */
static inline um_proto_comm_t *mca_pml_ubermatch_comm(struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_comm_t *c = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    return OPAL_LIKELY(NULL != c) ? c->proto : NULL;
}

/* The group this process sends to and receives from. */
static inline int mca_pml_ubermatch_peer_count(struct ompi_communicator_t *comm)
{
    return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
}

/* The engine hint of a collective message (negative tag, or MPI_ANY_TAG):
 * coll/ubermatch's calls name their collective, else the tag does. */
void mca_pml_ubermatch_hint_coll(int tag, size_t bytes, struct ompi_communicator_t *comm,
                                 um_hint_t *hint);

/* The engine hint of a message; computed once per send or receive, inline
 * for point-to-point tags. */
static inline void mca_pml_ubermatch_hint(int tag, size_t bytes, struct ompi_communicator_t *comm,
                                          um_hint_t *hint)
{
    hint->reserved = 0;
    hint->msg_size = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t) bytes;
    hint->comm_size = (uint32_t) mca_pml_ubermatch_peer_count(comm);
    hint->coll = UM_COLL_NONE;
    if (OPAL_UNLIKELY(tag < 0 && MPI_ANY_TAG != tag)) {
        mca_pml_ubermatch_hint_coll(tag, bytes, comm, hint);
    }
}

/* pml_ubermatch_coll.c: the hooks coll/ubermatch calls, published in the MCA
 * variable pml_ubermatch_coll_hooks; the per-communicator state; the hint of a
 * collective message from what coll/ubermatch told (false: it told nothing
 * about this one). */
int mca_pml_ubermatch_register_coll_hooks(void);
/* pml_ubermatch_component.c: an internal MCA variable holding the address of hooks. */
int mca_pml_ubermatch_publish_hooks(const char *name, const char *help, const void *hooks);
/* pml_ubermatch_am.c: the hooks libmpix_am calls (pml_ubermatch_am_hooks.h). */
int mca_pml_ubermatch_register_am_hooks(void);
void mca_pml_ubermatch_coll_construct(mca_pml_ubermatch_coll_state_t *state);
void mca_pml_ubermatch_coll_destruct(mca_pml_ubermatch_coll_state_t *state);
bool mca_pml_ubermatch_coll_hint(struct ompi_communicator_t *comm, int tag, um_hint_t *hint);
void mca_pml_ubermatch_coll_print_stats(struct ompi_communicator_t *comm);

/* The UCX endpoint of a peer, made on first use. */
um_proto_peer_t *mca_pml_ubermatch_connect(struct ompi_proc_t *proc);
static inline um_proto_peer_t *mca_pml_ubermatch_peer(struct ompi_communicator_t *comm, int rank)
{
    struct ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    um_proto_peer_t *peer = (um_proto_peer_t *) proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    return OPAL_LIKELY(NULL != peer) ? peer : mca_pml_ubermatch_connect(proc);
}

int mca_pml_ubermatch_init_module(bool enable_mpi_threads);
int mca_pml_ubermatch_fini_module(void);
int mca_pml_ubermatch_register_pvars(void);

int mca_pml_ubermatch_add_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_ubermatch_del_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_ubermatch_enable(bool enable);
int mca_pml_ubermatch_progress(void);
int mca_pml_ubermatch_ft_event(int state);
int mca_pml_ubermatch_add_comm(struct ompi_communicator_t *comm);
int mca_pml_ubermatch_del_comm(struct ompi_communicator_t *comm);

int mca_pml_ubermatch_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src,
                                 int tag, struct ompi_communicator_t *comm,
                                 struct ompi_request_t **request);
int mca_pml_ubermatch_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                            struct ompi_communicator_t *comm, struct ompi_request_t **request);
int mca_pml_ubermatch_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           struct ompi_communicator_t *comm, ompi_status_public_t *status);
int mca_pml_ubermatch_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                                 int tag, mca_pml_base_send_mode_t mode,
                                 struct ompi_communicator_t *comm,
                                 struct ompi_request_t **request);
int mca_pml_ubermatch_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                            int tag, mca_pml_base_send_mode_t mode,
                            struct ompi_communicator_t *comm, struct ompi_request_t **request);
int mca_pml_ubermatch_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode,
                           struct ompi_communicator_t *comm);
int mca_pml_ubermatch_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                             ompi_status_public_t *status);
int mca_pml_ubermatch_probe(int src, int tag, struct ompi_communicator_t *comm,
                            ompi_status_public_t *status);
int mca_pml_ubermatch_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                              struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_ubermatch_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                             struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_ubermatch_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                             struct ompi_message_t **message, struct ompi_request_t **request);
int mca_pml_ubermatch_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                            struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_ubermatch_start(size_t count, ompi_request_t **requests);
int mca_pml_ubermatch_dump(struct ompi_communicator_t *comm, int verbose);

END_C_DECLS

#endif /* PML_UBERMATCH_H */

/*
 * Requests of pml/ubermatch: one class for sends and receives, persistent or
 * not, kept on a free list.
 */
#ifndef PML_UBERMATCH_REQUEST_H
#define PML_UBERMATCH_REQUEST_H

#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include "ompi/mca/pml/ubermatch/pml_ubermatch_pack.h"
#include "opal/datatype/opal_convertor.h"

BEGIN_C_DECLS

typedef enum { PML_UM_SEND, PML_UM_RECV } mca_pml_ubermatch_request_kind_t;

typedef struct mca_pml_ubermatch_request {
    ompi_request_t ompi;
    mca_pml_ubermatch_request_kind_t kind;
    bool internal_bsend;        /* the transfer behind a completed MPI_Bsend: nobody waits */

    /* the MPI call, kept for MPI_Start */
    void *buf;
    size_t count;
    ompi_datatype_t *datatype;
    int peer;
    int tag;
    mca_pml_base_send_mode_t mode;

    void *packed;               /* send: packed copy of a non-contiguous buffer, or the bsend buffer */
    um_proto_send_op_t send;       /* send: the protocol core's state of the transfer */
    um_proto_recv_t recv;       /* receive: what the protocol core matches and fills */
    opal_convertor_t convertor; /* packing a non-contiguous send, unpacking a receive */
    mca_pml_ubermatch_gather_t gather; /* send: req->packed's packing, until the send completes
                                        * (UCX may pack from it after the call) */
    bool convertor_used;        /* prepared since the last release: cleanup needed */
} mca_pml_ubermatch_request_t;

OBJ_CLASS_DECLARATION(mca_pml_ubermatch_request_t);

void mca_pml_ubermatch_request_release(mca_pml_ubermatch_request_t *req);

/* With threads each thread keeps up to PML_UM_REQUEST_CACHE free requests of its
 * own: the shared free list costs two atomic operations a request (a 16-byte
 * compare-and-swap to take one, another to give it back). A thread's cache goes
 * back to the list when the thread exits, the finalizing thread's at
 * MPI_Finalize. */
#define PML_UM_REQUEST_CACHE 64
typedef struct {
    opal_free_list_item_t *head;
    int count;
    bool drained_at_exit; /* registered for the thread's exit */
} mca_pml_ubermatch_request_cache_t;
extern __thread mca_pml_ubermatch_request_cache_t mca_pml_ubermatch_request_cache;

int mca_pml_ubermatch_request_cache_init(void);
void mca_pml_ubermatch_request_cache_fini(void);

static inline mca_pml_ubermatch_request_t *mca_pml_ubermatch_request_take(void)
{
    if (!opal_using_threads()) {
        return (mca_pml_ubermatch_request_t *) opal_free_list_get_st(&mca_pml_ubermatch.requests);
    }
    mca_pml_ubermatch_request_cache_t *cache = &mca_pml_ubermatch_request_cache;
    opal_free_list_item_t *item = cache->head;
    if (OPAL_LIKELY(NULL != item)) {
        cache->head = (opal_free_list_item_t *) item->super.opal_list_next;
        --cache->count;
        return (mca_pml_ubermatch_request_t *) item;
    }
    return (mca_pml_ubermatch_request_t *) opal_free_list_get_mt(&mca_pml_ubermatch.requests);
}

int mca_pml_ubermatch_send_start(mca_pml_ubermatch_request_t *req);

/* Where a datatype's data starts, when count of it is one contiguous block. */
static inline void *mca_pml_ubermatch_contiguous_base(const void *buf, size_t count,
                                                     ompi_datatype_t *datatype)
{
    if (OPAL_UNLIKELY(!opal_datatype_is_contiguous_memory_layout(&datatype->super, count))) {
        return NULL;
    }
    return (char *) buf + datatype->super.true_lb;
}

static inline size_t mca_pml_ubermatch_packed_size(size_t count, ompi_datatype_t *datatype)
{
    return datatype->super.size * count;
}

/* Inline: every MPI_Irecv and MPI_Recv runs them. */
/* A request for one operation (persistent: kept across MPI_Start). */
static inline void mca_pml_ubermatch_reset_status(ompi_status_public_t *status)
{
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    status->_cancelled = 0;
    status->_ucount = 0;
}

/* A request holds its communicator until it is released, as Open MPI's PMLs do:
 * MPI_Comm_free with the operation pending must not delete the engine it waits
 * in. MPI_COMM_WORLD and MPI_COMM_SELF (intrinsic) live until MPI_Finalize, after
 * every operation: not counted, which with threads saves two atomic operations a
 * message (as Open MPI skips predefined datatypes' counts). */
static inline void mca_pml_ubermatch_comm_hold(struct ompi_communicator_t *comm)
{
    if (!OMPI_COMM_IS_INTRINSIC(comm)) {
        OBJ_RETAIN(comm);
    }
}

static inline void mca_pml_ubermatch_comm_let_go(struct ompi_communicator_t *comm)
{
    if (!OMPI_COMM_IS_INTRINSIC(comm)) {
        OBJ_RELEASE(comm);
    }
}

static inline __opal_attribute_always_inline__ mca_pml_ubermatch_request_t *
mca_pml_ubermatch_request_alloc(mca_pml_ubermatch_request_kind_t kind,
                                                             bool persistent, const void *buf,
                                                             size_t count, ompi_datatype_t *datatype,
                                                             int peer, int tag,
                                                             mca_pml_base_send_mode_t mode,
                                                             struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_request_t *req = mca_pml_ubermatch_request_take();
    if (OPAL_UNLIKELY(NULL == req)) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&req->ompi, persistent);
    req->ompi.req_state = persistent ? OMPI_REQUEST_INACTIVE : OMPI_REQUEST_ACTIVE;
    req->ompi.req_mpi_object.comm = comm;
    mca_pml_ubermatch_comm_hold(comm);
    mca_pml_ubermatch_reset_status(&req->ompi.req_status);
    req->kind = kind;
    req->internal_bsend = false;
    req->buf = (void *) buf;
    req->count = count;
    req->datatype = datatype;
    if (NULL != datatype) {
        OMPI_DATATYPE_RETAIN(datatype);
    }
    req->peer = peer;
    req->tag = tag;
    req->mode = mode;
    req->packed = NULL;
    return req;
}

/* peer and tag are the request's, passed by MPI_Irecv as its own arguments:
 * read back from the request just after the allocation wrote them, the pair
 * became one 8-byte load of two 4-byte stores, which the CPU cannot forward
 * (half of MPI_Irecv's own time in perf). */
static inline void mca_pml_ubermatch_recv_prepare(mca_pml_ubermatch_request_t *req, int peer,
                                                  int tag)
{
    struct ompi_communicator_t *comm = req->ompi.req_mpi_object.comm;
    size_t size = mca_pml_ubermatch_packed_size(req->count, req->datatype);
    req->recv.cookie = req;
    req->recv.buffer = mca_pml_ubermatch_contiguous_base(req->buf, req->count, req->datatype);
    req->recv.capacity = size;
    req->recv.source = peer;
    req->recv.tag = tag;
    mca_pml_ubermatch_hint(tag, size, comm, &req->recv.hint);
}

static inline __opal_attribute_always_inline__ int mca_pml_ubermatch_recv_start(mca_pml_ubermatch_request_t *req, int peer, int tag)
{
    struct ompi_communicator_t *comm = req->ompi.req_mpi_object.comm;
    int rc = mca_pml_ubermatch_assert_recv(comm, peer, tag);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    mca_pml_ubermatch_recv_prepare(req, peer, tag);
    rc = um_proto_post_recv(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &req->recv);
    if (OPAL_LIKELY(UM_PROTO_OK == rc)) {
        return OMPI_SUCCESS;
    }
    return mca_pml_ubermatch_recv_error(comm, peer, rc);
}

/* Starts the operation of an allocated (or restarted persistent) request. */
static inline int mca_pml_ubermatch_request_start(mca_pml_ubermatch_request_t *req)
{
    return PML_UM_SEND == req->kind ? mca_pml_ubermatch_send_start(req)
                                    : mca_pml_ubermatch_recv_start(req, req->peer, req->tag);
}

/* Receives an mprobe'd message into the request. */
int mca_pml_ubermatch_request_start_mrecv(mca_pml_ubermatch_request_t *req, um_proto_msg_t *msg);

/* A standard or ready send that completes inside the call (short messages;
 * with threads only through a shared-memory ring with room, and contiguous;
 * non-contiguous ones packed first): true when it went, with
 * no request needed; false when it did not, and nothing happened. Inline: this
 * is the whole of MPI_Send and MPI_Isend for small messages. */
static inline bool mca_pml_ubermatch_send_now(const void *buf, size_t count,
                                              ompi_datatype_t *datatype, int dst, int tag,
                                              mca_pml_base_send_mode_t mode,
                                              struct ompi_communicator_t *comm)
{
    size_t size;
    const void *data;
    um_proto_peer_t *peer;
    um_hint_t hint;

    if (OPAL_UNLIKELY(MCA_PML_BASE_SEND_SYNCHRONOUS == mode ||
                      MCA_PML_BASE_SEND_BUFFERED == mode)) {
        return false;
    }
    size = mca_pml_ubermatch_packed_size(count, datatype);
    data = mca_pml_ubermatch_contiguous_base(buf, count, datatype);
    peer = mca_pml_ubermatch_peer(comm, dst);
    if (OPAL_UNLIKELY(NULL == peer)) {
        return false; /* the request path reports it */
    }
    if (OPAL_UNLIKELY(NULL == data && size > 0)) {
        return size <= PML_UM_PACK_NOW_MAX &&
               mca_pml_ubermatch_send_packed_now(buf, count, datatype, size, peer, dst, tag, comm);
    }
    mca_pml_ubermatch_hint(tag, size, comm, &hint);
    return 1 == um_proto_send_now(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), peer,
                                  dst, tag, &hint, data, size);
}
void mca_pml_ubermatch_completed_send_init(void);
void mca_pml_ubermatch_completed_send_fini(void);

/* The protocol core's completion callbacks. */
extern const um_proto_callbacks_t mca_pml_ubermatch_callbacks;

END_C_DECLS

#endif

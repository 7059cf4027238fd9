#include "ompi/mca/pml/ubermatch/pml_ubermatch_request.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"

#include <pthread.h>

static int request_free(ompi_request_t **rptr);
static int request_cancel(ompi_request_t *ompi_req, int flag);

static void request_construct(mca_pml_ubermatch_request_t *req)
{
    OBJ_CONSTRUCT(&req->convertor, opal_convertor_t);
    req->ompi.req_type = OMPI_REQUEST_PML;
    req->ompi.req_start = mca_pml_ubermatch_start;
    req->ompi.req_free = request_free;
    req->ompi.req_cancel = request_cancel;
    req->datatype = NULL;
    req->packed = NULL;
    req->convertor_used = false;
}

static void request_destruct(mca_pml_ubermatch_request_t *req)
{
    OBJ_DESTRUCT(&req->convertor);
}

OBJ_CLASS_INSTANCE(mca_pml_ubermatch_request_t, ompi_request_t, request_construct,
                   request_destruct);

/* The convertor left clean, if it was prepared (most receives never unpack: no
 * call for them); a persistent request's earlier message's, before the next. */
static void convertor_clean(mca_pml_ubermatch_request_t *req)
{
    if (req->convertor_used) {
        opal_convertor_cleanup(&req->convertor);
        req->convertor_used = false;
    }
}

__thread mca_pml_ubermatch_request_cache_t mca_pml_ubermatch_request_cache;
static pthread_key_t request_cache_key;

static void request_cache_drain(mca_pml_ubermatch_request_cache_t *cache)
{
    while (NULL != cache->head) {
        opal_free_list_item_t *item = cache->head;
        cache->head = (opal_free_list_item_t *) item->super.opal_list_next;
        opal_free_list_return_mt(&mca_pml_ubermatch.requests, item);
    }
    cache->count = 0;
}

static void request_cache_exit(void *cache)
{
    request_cache_drain((mca_pml_ubermatch_request_cache_t *) cache);
}

int mca_pml_ubermatch_request_cache_init(void)
{
    return 0 == pthread_key_create(&request_cache_key, request_cache_exit) ? OMPI_SUCCESS
                                                                          : OMPI_ERROR;
}

/* Other threads' caches stay theirs (a thread still running after MPI_Finalize
 * makes no MPI call); their requests' memory goes with the free list's. */
void mca_pml_ubermatch_request_cache_fini(void)
{
    request_cache_drain(&mca_pml_ubermatch_request_cache);
    mca_pml_ubermatch_request_cache.drained_at_exit = false;
    pthread_key_delete(request_cache_key);
}

static inline void request_give_back(mca_pml_ubermatch_request_t *req)
{
    opal_free_list_item_t *item = (opal_free_list_item_t *) req;
    if (!opal_using_threads()) {
        opal_free_list_return_st(&mca_pml_ubermatch.requests, item);
        return;
    }
    mca_pml_ubermatch_request_cache_t *cache = &mca_pml_ubermatch_request_cache;
    if (OPAL_UNLIKELY(!cache->drained_at_exit)) {
        cache->drained_at_exit = 0 == pthread_setspecific(request_cache_key, cache);
    }
    if (OPAL_LIKELY(cache->count < PML_UM_REQUEST_CACHE && cache->drained_at_exit)) {
        item->super.opal_list_next = (opal_list_item_t *) cache->head;
        cache->head = item;
        ++cache->count;
        return;
    }
    opal_free_list_return_mt(&mca_pml_ubermatch.requests, item);
}

/* Inline in this file: MPI_Wait's free and every completion after MPI_Request_free. */
static inline void request_release(mca_pml_ubermatch_request_t *req)
{
    if (NULL != req->datatype) {
        OMPI_DATATYPE_RELEASE(req->datatype);
        req->datatype = NULL;
    }
    convertor_clean(req);
    OMPI_REQUEST_FINI(&req->ompi);
    /* Last: the communicator's destructor may run here (del_comm). */
    mca_pml_ubermatch_comm_let_go(req->ompi.req_mpi_object.comm);
    request_give_back(req);
}

void mca_pml_ubermatch_request_release(mca_pml_ubermatch_request_t *req)
{
    request_release(req);
}

/* A request MPI_Request_free let go of before it completed says so in
 * req_complete, the word Open MPI's completion swaps anyway (beside its
 * REQUEST_PENDING, REQUEST_COMPLETED and a waiter's sync): the freer and the
 * completer each change it with one compare-and-swap, and whichever comes
 * second releases the request. A flag of its own beside req_complete, set by
 * one and read by the other, let both pass by under MPI_THREAD_MULTIPLE (the
 * completer read it before the freer set it, the freer read req_complete
 * before the completer set it: a request and a hold on its communicator lost). */
#define PML_UM_REQUEST_FREED ((void *) 2L)

/* Signals completion, or releases a request nobody waits for any more. Open
 * MPI's components may set a callback that frees the request itself and
 * returns 1 (osc/pt2pt's incoming messages, coll/adapt's segments): it runs
 * first, as in ompi_request_complete, and such a request is released here
 * (it was not complete when it was freed). Nothing touches the request after
 * signalling it. */
static void request_complete(mca_pml_ubermatch_request_t *req)
{
    ompi_request_t *r = &req->ompi;
    void *seen = REQUEST_PENDING;
    if (OPAL_UNLIKELY(NULL != r->req_complete_cb)) {
        ompi_request_complete_fn_t fn = r->req_complete_cb;
        r->req_complete_cb = NULL; /* it may set another */
        if (0 != fn(r)) {
            if (PML_UM_REQUEST_FREED == r->req_complete) {
                request_release(req);
            }
            return;
        }
    }
    if (OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR(&r->req_complete, &seen, REQUEST_COMPLETED)) {
        return;
    }
    if (PML_UM_REQUEST_FREED != seen) { /* a waiter's sync */
        seen = OPAL_ATOMIC_SWAP_PTR(&r->req_complete, REQUEST_COMPLETED);
        if (PML_UM_REQUEST_FREED != seen) {
            if (REQUEST_PENDING != seen) {
                wait_sync_update((ompi_wait_sync_t *) seen, 1, r->req_status.MPI_ERROR);
            }
            return;
        }
    }
    request_release(req);
}

static int request_free(ompi_request_t **rptr)
{
    mca_pml_ubermatch_request_t *req = (mca_pml_ubermatch_request_t *) *rptr;
    void *seen = REQUEST_PENDING;
    *rptr = MPI_REQUEST_NULL;
    if (OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_PTR(&req->ompi.req_complete, &seen,
                                                PML_UM_REQUEST_FREED)) {
        return OMPI_SUCCESS; /* its completion releases it */
    }
    if (REQUEST_COMPLETED == seen) {
        request_release(req);
    } /* else a thread waits in it: an erroneous program, kept rather than freed under it */
    return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t *ompi_req, int flag)
{
    mca_pml_ubermatch_request_t *req = (mca_pml_ubermatch_request_t *) ompi_req;
    int cancelled = 0;
    (void) flag;
    /* Sends are never cancelled (MPI allows it): they complete as usual. */
    if (PML_UM_RECV != req->kind || REQUEST_COMPLETE(ompi_req) ||
        OMPI_REQUEST_ACTIVE != ompi_req->req_state) {
        return OMPI_SUCCESS;
    }
    um_proto_cancel(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(ompi_req->req_mpi_object.comm),
                    &req->recv, &cancelled);
    if (cancelled) {
        ompi_req->req_status._cancelled = 1;
        ompi_req->req_status.MPI_ERROR = MPI_SUCCESS;
        request_complete(req);
    }
    return OMPI_SUCCESS;
}

/* A non-contiguous send's packed copy goes back to the pool. */
static void release_packed(mca_pml_ubermatch_request_t *req)
{
    if (NULL != req->packed) {
        um_proto_send_buffer_return(mca_pml_ubermatch.proto, req->packed,
                                    mca_pml_ubermatch_packed_size(req->count, req->datatype));
        req->packed = NULL;
    }
}

/* A completed send's status says who sent what, as ob1's does: Open MPI's own
 * components read it (osc/pt2pt tells a passive target's operations from an
 * active one's by the tag of the send that returns a Get_accumulate's result). */
static void send_status(mca_pml_ubermatch_request_t *req)
{
    ompi_status_public_t *status = &req->ompi.req_status;
    status->MPI_SOURCE = ompi_comm_rank(req->ompi.req_mpi_object.comm);
    status->MPI_TAG = req->tag;
    status->_ucount = mca_pml_ubermatch_packed_size(req->count, req->datatype);
}

static int send_start(mca_pml_ubermatch_request_t *req)
{
    struct ompi_communicator_t *comm = req->ompi.req_mpi_object.comm;
    size_t size = mca_pml_ubermatch_packed_size(req->count, req->datatype);
    um_proto_peer_t *peer = mca_pml_ubermatch_peer(comm, req->peer);
    const void *data = mca_pml_ubermatch_contiguous_base(req->buf, req->count, req->datatype);
    mca_pml_ubermatch_request_t *wire = req; /* the request the transfer completes */
    bool packing = false;
    um_hint_t hint;
    int rc;

    if (OPAL_UNLIKELY(NULL == peer)) {
        return OMPI_ERR_UNREACH;
    }
    if (MCA_PML_BASE_SEND_BUFFERED == req->mode) {
        /* Copy into the attached buffer and complete now; an internal request
         * carries the data and gives the buffer back. */
        void *copy = mca_pml_base_bsend_request_alloc_buf(size);
        if (NULL == copy) {
            /* Space of messages already received may wait for their senders'
             * completion (a pull's hand-back not reaped yet, or another thread
             * progressing): complete them, then try once more. */
            um_proto_settle_sends(mca_pml_ubermatch.proto);
            copy = mca_pml_base_bsend_request_alloc_buf(size);
        }
        if (NULL == copy) {
            return MPI_ERR_BUFFER;
        }
        if (OMPI_SUCCESS != mca_pml_ubermatch_pack(&req->convertor, req->buf, req->count,
                                                   req->datatype, copy, size)) {
            mca_pml_base_bsend_request_free(copy);
            return OMPI_ERROR;
        }
        wire = mca_pml_ubermatch_request_alloc(PML_UM_SEND, false, NULL, 0, NULL, req->peer,
                                               req->tag, MCA_PML_BASE_SEND_STANDARD, comm);
        if (NULL == wire) {
            mca_pml_base_bsend_request_free(copy);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        wire->internal_bsend = true;
        wire->packed = copy;
        data = copy;
    } else if (NULL == data && size > 0) {
        /* Packed by the protocol as it sends, into a buffer it takes where it
         * needs one (req->packed, given back when the request completes):
         * where it can, after the record went out, while the receiver
         * unpacks; through UCX, by UCX fragment by fragment, with no buffer.
         * The convertor is cleaned when the request is released. */
        packing = true;
        convertor_clean(req);
        mca_pml_ubermatch_gather_init(&req->gather, &req->convertor, req->buf, req->count, req->datatype);
        req->convertor_used = !req->gather.strided;
    }

    mca_pml_ubermatch_hint(req->tag, size, comm, &hint);
    if (packing) {
        rc = um_proto_send_packing(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), peer,
                                   req->peer, req->tag, &hint, &req->packed, size,
                                   MCA_PML_BASE_SEND_SYNCHRONOUS == req->mode, &wire->send, wire,
                                   mca_pml_ubermatch_gather, &req->gather,
                                   mca_pml_ubermatch_gather_rows(&req->gather));
    } else {
        rc = um_proto_send(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), peer, req->peer,
                           req->tag, &hint, data, size, MCA_PML_BASE_SEND_SYNCHRONOUS == req->mode,
                           &wire->send, wire);
    }
    if (OPAL_UNLIKELY(UM_PROTO_OK != rc)) {
        release_packed(req);
        return UM_PROTO_NOMEM == rc ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERROR;
    }
    if (wire != req) {
        send_status(req);
        request_complete(req);
    }
    return OMPI_SUCCESS;
}

static int completed_send_free(ompi_request_t **rptr)
{
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int completed_send_cancel(ompi_request_t *req, int flag)
{
    (void) req;
    (void) flag;
    return OMPI_SUCCESS; /* already complete: nothing to cancel */
}

void mca_pml_ubermatch_completed_send_init(void)
{
    ompi_request_t *req = &mca_pml_ubermatch.completed_send;
    OBJ_CONSTRUCT(req, ompi_request_t);
    OMPI_REQUEST_INIT(req, false);
    req->req_type = OMPI_REQUEST_PML;
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_free = completed_send_free;
    req->req_cancel = completed_send_cancel;
    req->req_mpi_object.comm = &ompi_mpi_comm_world.comm;
    mca_pml_ubermatch_reset_status(&req->req_status);
    ompi_request_complete(req, false);
}

void mca_pml_ubermatch_completed_send_fini(void)
{
    ompi_request_t *req = &mca_pml_ubermatch.completed_send;
    req->req_state = OMPI_REQUEST_INVALID;
    OMPI_REQUEST_FINI(req);
    OBJ_DESTRUCT(req);
}

int mca_pml_ubermatch_request_start_mrecv(mca_pml_ubermatch_request_t *req, um_proto_msg_t *msg)
{
    mca_pml_ubermatch_recv_prepare(req, req->peer, req->tag);
    return UM_PROTO_OK == um_proto_msg_recv(mca_pml_ubermatch.proto, msg, &req->recv)
               ? OMPI_SUCCESS
               : OMPI_ERROR;
}

int mca_pml_ubermatch_send_start(mca_pml_ubermatch_request_t *req)
{
    return send_start(req);
}

/* A request MPI_Start(all) hands us, made active; NULL for one that is not ours. */
static mca_pml_ubermatch_request_t *activate(ompi_request_t *request)
{
    mca_pml_ubermatch_request_t *req = (mca_pml_ubermatch_request_t *) request;
    if (NULL == req || OMPI_REQUEST_PML != req->ompi.req_type) {
        return NULL;
    }
    req->ompi.req_complete = REQUEST_PENDING;
    req->ompi.req_state = OMPI_REQUEST_ACTIVE;
    mca_pml_ubermatch_reset_status(&req->ompi.req_status);
    return req;
}

/* Not started (e.g. a wildcard the communicator's assertions rule out):
 * inactive again, so that MPI_Wait returns and MPI_Request_free frees it. */
static void not_started(mca_pml_ubermatch_request_t *req)
{
    req->ompi.req_state = OMPI_REQUEST_INACTIVE;
    req->ompi.req_complete = REQUEST_COMPLETED;
}

/* A receive request of ours; its communicator in *comm. */
static bool our_recv(ompi_request_t *request, struct ompi_communicator_t **comm)
{
    const mca_pml_ubermatch_request_t *req = (const mca_pml_ubermatch_request_t *) request;
    if (NULL == req || OMPI_REQUEST_PML != req->ompi.req_type || PML_UM_RECV != req->kind) {
        return false;
    }
    *comm = req->ompi.req_mpi_object.comm;
    return true;
}

/* A receive request of ours on comm. */
static bool batched_recv(ompi_request_t *request, struct ompi_communicator_t *comm)
{
    struct ompi_communicator_t *its;
    return our_recv(request, &its) && its == comm;
}

/* Receives next to each other in MPI_Startall, of one communicator: posted as
 * one batch (the engine's post_recv_batch, one lock), in order, as one by one.
 * Returns how many requests it took (at least 1) and *rc. */
static size_t start_recvs(ompi_request_t **requests, size_t count, int *rc)
{
    enum { RUN = 64 };
    um_proto_recv_t *recvs[RUN];
    mca_pml_ubermatch_request_t *first = (mca_pml_ubermatch_request_t *) requests[0];
    struct ompi_communicator_t *comm = first->ompi.req_mpi_object.comm;
    size_t n = 0, active = 0, done = 0;
    *rc = OMPI_SUCCESS;
    for (; n < count && n < RUN && batched_recv(requests[n], comm); ++n) {
        mca_pml_ubermatch_request_t *req = activate(requests[n]);
        active = n + 1;
        *rc = mca_pml_ubermatch_assert_recv(comm, req->peer, req->tag);
        if (OPAL_UNLIKELY(OMPI_SUCCESS != *rc)) {
            break;
        }
        mca_pml_ubermatch_recv_prepare(req, req->peer, req->tag);
        recvs[n] = &req->recv;
    }
    int prc = um_proto_post_recv_batch(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), recvs, n, &done);
    if (OPAL_UNLIKELY(UM_PROTO_OK != prc)) {
        *rc = mca_pml_ubermatch_recv_error(comm, ((mca_pml_ubermatch_request_t *) requests[done])->peer, prc);
    }
    if (OPAL_UNLIKELY(OMPI_SUCCESS != *rc)) { /* those activated and not posted go back */
        for (size_t k = done; k < active; ++k) {
            not_started((mca_pml_ubermatch_request_t *) requests[k]);
        }
        return active;
    }
    return n;
}

int mca_pml_ubermatch_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count;) {
        struct ompi_communicator_t *comm;
        int rc;
        if (i + 1 < count && our_recv(requests[i], &comm) && batched_recv(requests[i + 1], comm)) {
            i += start_recvs(requests + i, count - i, &rc);
        } else {
            mca_pml_ubermatch_request_t *req = activate(requests[i++]);
            if (NULL == req) {
                continue;
            }
            rc = mca_pml_ubermatch_request_start(req);
            if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
                not_started(req);
            }
        }
        if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* --- completion callbacks of the protocol core --- */

static void send_done(void *cookie, int status)
{
    mca_pml_ubermatch_request_t *req = cookie;
    if (req->internal_bsend) {
        mca_pml_base_bsend_request_free(req->packed);
        req->packed = NULL;
        mca_pml_ubermatch_request_release(req);
        return;
    }
    release_packed(req);
    req->ompi.req_status.MPI_ERROR = UM_PROTO_OK == status ? MPI_SUCCESS : MPI_ERR_OTHER;
    send_status(req);
    request_complete(req);
}

/* A message's pieces: the convertor is set up at offset 0 and goes on from
 * where the last piece left it, or is moved where a piece out of order starts
 * (UCX's rendezvous may deliver so). A piece it cannot be moved to, or cannot
 * take, is refused rather than written elsewhere: the receive fails. */
static int recv_unpack(void *cookie, size_t offset, const void *data, size_t length)
{
    mca_pml_ubermatch_request_t *req = cookie;
    struct iovec iov = {(void *) data, length};
    uint32_t iov_count = 1;
    size_t max = length;
    mca_pml_ubermatch_strided_t strided;

    if (mca_pml_ubermatch_strided_of(req->datatype, &strided)) {
        mca_pml_ubermatch_strided_copy(&strided, req->buf, (void *) data, offset, length, false);
        return 0;
    }
    if (0 == offset) {
        convertor_clean(req);
        req->convertor_used = true;
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &req->datatype->super,
                                                 req->count, req->buf, 0, &req->convertor);
    } else if (!mca_pml_ubermatch_convertor_seek(&req->convertor, offset)) {
        return 1;
    }
    return opal_convertor_unpack(&req->convertor, &iov, &iov_count, &max) < 0 ? 1 : 0;
}

static void recv_done(void *cookie, int32_t source, int32_t tag, size_t received, size_t length,
                      int status)
{
    mca_pml_ubermatch_request_t *req = cookie;
    ompi_status_public_t *st = &req->ompi.req_status;
    (void) length;
    st->MPI_SOURCE = source;
    st->MPI_TAG = tag;
    st->_ucount = received;
    st->MPI_ERROR = UM_PROTO_OK == status          ? MPI_SUCCESS
                    : UM_PROTO_TRUNCATED == status ? MPI_ERR_TRUNCATE
                    : UM_PROTO_NOMEM == status     ? MPI_ERR_NO_MEM
                                                   : MPI_ERR_OTHER;
    request_complete(req);
}

const um_proto_callbacks_t mca_pml_ubermatch_callbacks = {
    .send_done = send_done,
    .recv_done = recv_done,
    .recv_unpack = recv_unpack,
};

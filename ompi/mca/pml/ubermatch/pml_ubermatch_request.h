/*
 * Requests of pml/ubermatch: one class for sends and receives, persistent or
 * not, kept on a free list.
 */
#ifndef PML_UBERMATCH_REQUEST_H
#define PML_UBERMATCH_REQUEST_H

#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include "opal/datatype/opal_convertor.h"

BEGIN_C_DECLS

typedef enum { PML_UM_SEND, PML_UM_RECV } mca_pml_ubermatch_request_kind_t;

typedef struct mca_pml_ubermatch_request {
    ompi_request_t ompi;
    mca_pml_ubermatch_request_kind_t kind;
    volatile bool free_called;  /* MPI_Request_free came before completion */
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
    opal_convertor_t convertor; /* receive: unpacking into a non-contiguous buffer */
} mca_pml_ubermatch_request_t;

OBJ_CLASS_DECLARATION(mca_pml_ubermatch_request_t);

/* A request for one operation (persistent: kept across MPI_Start). */
mca_pml_ubermatch_request_t *mca_pml_ubermatch_request_alloc(mca_pml_ubermatch_request_kind_t kind,
                                                             bool persistent, const void *buf,
                                                             size_t count, ompi_datatype_t *datatype,
                                                             int peer, int tag,
                                                             mca_pml_base_send_mode_t mode,
                                                             struct ompi_communicator_t *comm);
void mca_pml_ubermatch_request_release(mca_pml_ubermatch_request_t *req);

/* Starts the operation of an allocated (or restarted persistent) request. */
int mca_pml_ubermatch_request_start(mca_pml_ubermatch_request_t *req);

/* Receives an mprobe'd message into the request. */
int mca_pml_ubermatch_request_start_mrecv(mca_pml_ubermatch_request_t *req, um_proto_msg_t *msg);

/* A standard or ready send of contiguous data that UCX completes inside the
 * call (short messages, single-threaded): true when it went, with no request
 * needed; false when it did not, and nothing happened. */
bool mca_pml_ubermatch_send_now(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                                int tag, mca_pml_base_send_mode_t mode,
                                struct ompi_communicator_t *comm);
void mca_pml_ubermatch_completed_send_init(void);
void mca_pml_ubermatch_completed_send_fini(void);

/* The protocol core's completion callbacks. */
extern const um_proto_callbacks_t mca_pml_ubermatch_callbacks;

END_C_DECLS

#endif

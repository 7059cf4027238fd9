/*
 * pml/ubermatch: MPI_Iprobe, MPI_Probe, MPI_Improbe and MPI_Mprobe, through
 * the protocol core's probe; MPI_Imrecv and MPI_Mrecv are in pml_ubermatch.c.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include "ompi/message/message.h"
#include "opal/runtime/opal_progress.h"

/* Probes, like receives, leave MPI_ERROR alone. */
static void set_probe_status(ompi_status_public_t *status, const um_proto_msg_info_t *info)
{
    if (NULL != status) {
        status->MPI_SOURCE = info->source;
        status->MPI_TAG = info->tag;
        status->_cancelled = 0;
        status->_ucount = info->length;
    }
}

static int probe_once(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    um_proto_msg_info_t info;
    um_proto_msg_t *msg = NULL;
    um_hint_t hint;
    int rc;

    mca_pml_ubermatch_hint(tag, 0, comm, &hint);
    *matched = 0;
    rc = mca_pml_ubermatch_assert_recv(comm, src, tag);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    rc = um_proto_probe(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), src, tag, &hint,
                        NULL != message, matched, &info, &msg);
    if (OPAL_UNLIKELY(UM_PROTO_OK != rc)) {
        return mca_pml_ubermatch_recv_error(comm, src, rc);
    }
    if (!*matched) {
        return OMPI_SUCCESS;
    }
    set_probe_status(status, &info);
    if (NULL != message) {
        struct ompi_message_t *m = ompi_message_alloc();
        if (OPAL_UNLIKELY(NULL == m)) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        m->comm = comm;
        m->req_ptr = msg;
        m->peer = info.source;
        m->count = info.length;
        *message = m;
    }
    return OMPI_SUCCESS;
}

/* One look; when nothing matched, progress once (MPI_Iprobe must progress). */
static int probe_test(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    int rc = probe_once(src, tag, comm, matched, message, status);
    if (OMPI_SUCCESS == rc && !*matched) {
        opal_progress();
    }
    return rc;
}

/* Looks until a message matches. */
static int probe_wait(int src, int tag, struct ompi_communicator_t *comm,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    int matched = 0;
    int rc;
    while (OMPI_SUCCESS == (rc = probe_test(src, tag, comm, &matched, message, status)) &&
           !matched) {
    }
    return rc;
}

int mca_pml_ubermatch_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                             ompi_status_public_t *status)
{
    return probe_test(src, tag, comm, matched, NULL, status);
}

int mca_pml_ubermatch_probe(int src, int tag, struct ompi_communicator_t *comm,
                            ompi_status_public_t *status)
{
    return probe_wait(src, tag, comm, NULL, status);
}

int mca_pml_ubermatch_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                              struct ompi_message_t **message, ompi_status_public_t *status)
{
    return probe_test(src, tag, comm, matched, message, status);
}

int mca_pml_ubermatch_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                             struct ompi_message_t **message, ompi_status_public_t *status)
{
    return probe_wait(src, tag, comm, message, status);
}

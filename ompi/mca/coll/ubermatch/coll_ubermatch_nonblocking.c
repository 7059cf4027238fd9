/*
 * coll/ubermatch: the nonblocking collectives. The call only starts the
 * operation; the PML learns the tags it reserved (collective_end) and gives
 * the operation's hint to every message with those tags, whenever it is sent
 * or received.
 */
#include "ompi/mca/coll/ubermatch/coll_ubermatch.h"

#define BYTES mca_coll_ubermatch_bytes
#define PEERS mca_coll_ubermatch_peers
#define NB MCA_PML_UBERMATCH_COLL_NONBLOCKING

static int um_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    UM_FORWARD(iallgather, UM_COLL_ALLGATHER, BYTES(rcount, rdtype), NB, sbuf, scount, sdtype, rbuf,
               rcount, rdtype, comm, request);
}

static int um_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    UM_FORWARD(iallgatherv, UM_COLL_ALLGATHERV,
               mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype), NB, sbuf, scount, sdtype,
               rbuf, rcounts, disps, rdtype, comm, request);
}

static int um_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(iallreduce, UM_COLL_ALLREDUCE, BYTES(count, dtype), NB, sbuf, rbuf, count, dtype, op,
               comm, request);
}

static int um_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    UM_FORWARD(ialltoall, UM_COLL_ALLTOALL, BYTES(rcount, rdtype), NB, sbuf, scount, sdtype, rbuf,
               rcount, rdtype, comm, request);
}

static int um_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *rdisps, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    UM_FORWARD(ialltoallv, UM_COLL_ALLTOALLV,
               mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype), NB, sbuf, scounts, sdisps,
               sdtype, rbuf, rcounts, rdisps, rdtype, comm, request);
}

static int um_ialltoallw(const void *sbuf, const int *scounts, const int *sdisps,
                         struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                         const int *rdisps, struct ompi_datatype_t *const *rdtypes,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    UM_FORWARD(ialltoallw, UM_COLL_ALLTOALLW,
               mca_coll_ubermatch_bytes_w(rcounts, rdtypes, PEERS(comm)), NB, sbuf, scounts, sdisps,
               sdtypes, rbuf, rcounts, rdisps, rdtypes, comm, request);
}

static int um_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    UM_FORWARD(ibarrier, UM_COLL_BARRIER, 0, NB, comm, request);
}

static int um_ibcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                     struct ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module)
{
    UM_FORWARD(ibcast, UM_COLL_BCAST,
               UM_ROOTED(comm, root, BYTES(count, datatype), BYTES(count, datatype)), NB, buff,
               count, datatype, root, comm, request);
}

static int um_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(iexscan, UM_COLL_EXSCAN, BYTES(count, dtype), NB, sbuf, rbuf, count, dtype, op, comm,
               request);
}

static int um_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdtype, int root,
                      struct ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    UM_FORWARD(igather, UM_COLL_GATHER,
               UM_ROOTED(comm, root, BYTES(rcount, rdtype), BYTES(scount, sdtype)), NB, sbuf,
               scount, sdtype, rbuf, rcount, rdtype, root, comm, request);
}

static int um_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                       int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    UM_FORWARD(igatherv, UM_COLL_GATHERV,
               UM_ROOTED(comm, root, mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype),
                         BYTES(scount, sdtype)),
               NB, sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, root, comm, request);
}

static int um_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(ireduce, UM_COLL_REDUCE,
               UM_ROOTED(comm, root, BYTES(count, dtype), BYTES(count, dtype)), NB, sbuf, rbuf,
               count, dtype, op, root, comm, request);
}

static int um_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    /* recvcounts has one entry per process of the local group, also on intercommunicators */
    UM_FORWARD(ireduce_scatter, UM_COLL_REDUCE_SCATTER,
               mca_coll_ubermatch_bytes_v(rcounts, ompi_comm_size(comm), dtype), NB, sbuf, rbuf,
               rcounts, dtype, op, comm, request);
}

static int um_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    UM_FORWARD(ireduce_scatter_block, UM_COLL_REDUCE_SCATTER_BLOCK, BYTES(rcount, dtype), NB, sbuf,
               rbuf, rcount, dtype, op, comm, request);
}

static int um_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(iscan, UM_COLL_SCAN, BYTES(count, dtype), NB, sbuf, rbuf, count, dtype, op, comm,
               request);
}

static int um_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    UM_FORWARD(iscatter, UM_COLL_SCATTER,
               UM_ROOTED(comm, root, BYTES(scount, sdtype), BYTES(rcount, rdtype)), NB, sbuf,
               scount, sdtype, rbuf, rcount, rdtype, root, comm, request);
}

static int um_iscatterv(const void *sbuf, const int *scounts, const int *disps,
                        struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(iscatterv, UM_COLL_SCATTERV,
               UM_ROOTED(comm, root, mca_coll_ubermatch_bytes_v(scounts, PEERS(comm), sdtype),
                         BYTES(rcount, rdtype)),
               NB, sbuf, scounts, disps, sdtype, rbuf, rcount, rdtype, root, comm, request);
}

void mca_coll_ubermatch_set_nonblocking(mca_coll_base_module_t *m)
{
    m->coll_iallgather = um_iallgather;
    m->coll_iallgatherv = um_iallgatherv;
    m->coll_iallreduce = um_iallreduce;
    m->coll_ialltoall = um_ialltoall;
    m->coll_ialltoallv = um_ialltoallv;
    m->coll_ialltoallw = um_ialltoallw;
    m->coll_ibarrier = um_ibarrier;
    m->coll_ibcast = um_ibcast;
    m->coll_iexscan = um_iexscan;
    m->coll_igather = um_igather;
    m->coll_igatherv = um_igatherv;
    m->coll_ireduce = um_ireduce;
    m->coll_ireduce_scatter = um_ireduce_scatter;
    m->coll_ireduce_scatter_block = um_ireduce_scatter_block;
    m->coll_iscan = um_iscan;
    m->coll_iscatter = um_iscatter;
    m->coll_iscatterv = um_iscatterv;
}

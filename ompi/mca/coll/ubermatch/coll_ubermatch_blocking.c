/*
 * coll/ubermatch: the blocking collectives, forwarded to the module below
 * between the PML's collective_begin and collective_end.
 */
#include "ompi/mca/coll/ubermatch/coll_ubermatch.h"

#define BYTES mca_coll_ubermatch_bytes
#define PEERS mca_coll_ubermatch_peers

static int um_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(allgather, UM_COLL_ALLGATHER, BYTES(rcount, rdtype), 0, sbuf, scount, sdtype, rbuf,
               rcount, rdtype, comm);
}

static int um_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(allgatherv, UM_COLL_ALLGATHERV,
               mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype), 0, sbuf, scount, sdtype,
               rbuf, rcounts, disps, rdtype, comm);
}

static int um_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    UM_FORWARD(allreduce, UM_COLL_ALLREDUCE, BYTES(count, dtype), 0, sbuf, rbuf, count, dtype, op,
               comm);
}

static int um_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    UM_FORWARD(alltoall, UM_COLL_ALLTOALL, BYTES(rcount, rdtype), 0, sbuf, scount, sdtype, rbuf,
               rcount, rdtype, comm);
}

static int um_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                        struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *rdisps, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(alltoallv, UM_COLL_ALLTOALLV,
               mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype), 0, sbuf, scounts, sdisps,
               sdtype, rbuf, rcounts, rdisps, rdtype, comm);
}

static int um_alltoallw(const void *sbuf, const int *scounts, const int *sdisps,
                        struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                        const int *rdisps, struct ompi_datatype_t *const *rdtypes,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(alltoallw, UM_COLL_ALLTOALLW,
               mca_coll_ubermatch_bytes_w(rcounts, rdtypes, PEERS(comm)), 0, sbuf, scounts, sdisps,
               sdtypes, rbuf, rcounts, rdisps, rdtypes, comm);
}

static int um_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(barrier, UM_COLL_BARRIER, 0, 0, comm);
}

static int um_bcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                    struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(bcast, UM_COLL_BCAST,
               UM_ROOTED(comm, root, BYTES(count, datatype), BYTES(count, datatype)), 0, buff,
               count, datatype, root, comm);
}

static int um_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    UM_FORWARD(exscan, UM_COLL_EXSCAN, BYTES(count, dtype), 0, sbuf, rbuf, count, dtype, op, comm);
}

static int um_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                     int rcount, struct ompi_datatype_t *rdtype, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(gather, UM_COLL_GATHER,
               UM_ROOTED(comm, root, BYTES(rcount, rdtype), BYTES(scount, sdtype)), 0, sbuf, scount,
               sdtype, rbuf, rcount, rdtype, root, comm);
}

static int um_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                      int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(gatherv, UM_COLL_GATHERV,
               UM_ROOTED(comm, root, mca_coll_ubermatch_bytes_v(rcounts, PEERS(comm), rdtype),
                         BYTES(scount, sdtype)),
               0, sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, root, comm);
}

static int um_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    UM_FORWARD(reduce, UM_COLL_REDUCE,
               UM_ROOTED(comm, root, BYTES(count, dtype), BYTES(count, dtype)), 0, sbuf, rbuf,
               count, dtype, op, root, comm);
}

static int um_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    /* recvcounts has one entry per process of the local group, also on intercommunicators */
    UM_FORWARD(reduce_scatter, UM_COLL_REDUCE_SCATTER,
               mca_coll_ubermatch_bytes_v(rcounts, ompi_comm_size(comm), dtype), 0, sbuf, rbuf,
               rcounts, dtype, op, comm);
}

static int um_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(reduce_scatter_block, UM_COLL_REDUCE_SCATTER_BLOCK, BYTES(rcount, dtype), 0, sbuf,
               rbuf, rcount, dtype, op, comm);
}

static int um_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                   mca_coll_base_module_t *module)
{
    UM_FORWARD(scan, UM_COLL_SCAN, BYTES(count, dtype), 0, sbuf, rbuf, count, dtype, op, comm);
}

static int um_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(scatter, UM_COLL_SCATTER,
               UM_ROOTED(comm, root, BYTES(scount, sdtype), BYTES(rcount, rdtype)), 0, sbuf, scount,
               sdtype, rbuf, rcount, rdtype, root, comm);
}

static int um_scatterv(const void *sbuf, const int *scounts, const int *disps,
                       struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    UM_FORWARD(scatterv, UM_COLL_SCATTERV,
               UM_ROOTED(comm, root, mca_coll_ubermatch_bytes_v(scounts, PEERS(comm), sdtype),
                         BYTES(rcount, rdtype)),
               0, sbuf, scounts, disps, sdtype, rbuf, rcount, rdtype, root, comm);
}

void mca_coll_ubermatch_set_blocking(mca_coll_base_module_t *m)
{
    m->coll_allgather = um_allgather;
    m->coll_allgatherv = um_allgatherv;
    m->coll_allreduce = um_allreduce;
    m->coll_alltoall = um_alltoall;
    m->coll_alltoallv = um_alltoallv;
    m->coll_alltoallw = um_alltoallw;
    m->coll_barrier = um_barrier;
    m->coll_bcast = um_bcast;
    m->coll_exscan = um_exscan;
    m->coll_gather = um_gather;
    m->coll_gatherv = um_gatherv;
    m->coll_reduce = um_reduce;
    m->coll_reduce_scatter = um_reduce_scatter;
    m->coll_reduce_scatter_block = um_reduce_scatter_block;
    m->coll_scan = um_scan;
    m->coll_scatter = um_scatter;
    m->coll_scatterv = um_scatterv;
}

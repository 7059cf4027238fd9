/*
 * coll/ubermatch: the neighbourhood collectives, blocking and nonblocking, all
 * reported as UM_COLL_NEIGHBOR. Message size: the block sent to each
 * neighbour; 0 for the v and w variants (their counts are per neighbour, and
 * the neighbour count is the topology's).
 */
#include "ompi/mca/coll/ubermatch/coll_ubermatch.h"

#define BYTES mca_coll_ubermatch_bytes
#define NB MCA_PML_UBERMATCH_COLL_NONBLOCKING

static int um_neighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(neighbor_allgather, UM_COLL_NEIGHBOR, BYTES(scount, sdtype), 0, sbuf, scount, sdtype,
               rbuf, rcount, rdtype, comm);
}

static int um_neighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, const int *rcounts, const int *disps,
                                  struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module)
{
    UM_FORWARD(neighbor_allgatherv, UM_COLL_NEIGHBOR, 0, 0, sbuf, scount, sdtype, rbuf, rcounts,
               disps, rdtype, comm);
}

static int um_neighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(neighbor_alltoall, UM_COLL_NEIGHBOR, BYTES(scount, sdtype), 0, sbuf, scount, sdtype,
               rbuf, rcount, rdtype, comm);
}

static int um_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                 const int *rdisps, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(neighbor_alltoallv, UM_COLL_NEIGHBOR, 0, 0, sbuf, scounts, sdisps, sdtype, rbuf,
               rcounts, rdisps, rdtype, comm);
}

static int um_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdisps,
                                 struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                 const int *rcounts, const MPI_Aint *rdisps,
                                 struct ompi_datatype_t *const *rdtypes,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    UM_FORWARD(neighbor_alltoallw, UM_COLL_NEIGHBOR, 0, 0, sbuf, scounts, sdisps, sdtypes, rbuf,
               rcounts, rdisps, rdtypes, comm);
}

static int um_ineighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    UM_FORWARD(ineighbor_allgather, UM_COLL_NEIGHBOR, BYTES(scount, sdtype), NB, sbuf, scount,
               sdtype, rbuf, rcount, rdtype, comm, request);
}

static int um_ineighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, const int *rcounts, const int *disps,
                                   struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    UM_FORWARD(ineighbor_allgatherv, UM_COLL_NEIGHBOR, 0, NB, sbuf, scount, sdtype, rbuf, rcounts,
               disps, rdtype, comm, request);
}

static int um_ineighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    UM_FORWARD(ineighbor_alltoall, UM_COLL_NEIGHBOR, BYTES(scount, sdtype), NB, sbuf, scount,
               sdtype, rbuf, rcount, rdtype, comm, request);
}

static int um_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                                  struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                  const int *rdisps, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    UM_FORWARD(ineighbor_alltoallv, UM_COLL_NEIGHBOR, 0, NB, sbuf, scounts, sdisps, sdtype, rbuf,
               rcounts, rdisps, rdtype, comm, request);
}

static int um_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdisps,
                                  struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                  const int *rcounts, const MPI_Aint *rdisps,
                                  struct ompi_datatype_t *const *rdtypes,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    UM_FORWARD(ineighbor_alltoallw, UM_COLL_NEIGHBOR, 0, NB, sbuf, scounts, sdisps, sdtypes, rbuf,
               rcounts, rdisps, rdtypes, comm, request);
}

void mca_coll_ubermatch_set_neighbor(mca_coll_base_module_t *m)
{
    m->coll_neighbor_allgather = um_neighbor_allgather;
    m->coll_neighbor_allgatherv = um_neighbor_allgatherv;
    m->coll_neighbor_alltoall = um_neighbor_alltoall;
    m->coll_neighbor_alltoallv = um_neighbor_alltoallv;
    m->coll_neighbor_alltoallw = um_neighbor_alltoallw;
    m->coll_ineighbor_allgather = um_ineighbor_allgather;
    m->coll_ineighbor_allgatherv = um_ineighbor_allgatherv;
    m->coll_ineighbor_alltoall = um_ineighbor_alltoall;
    m->coll_ineighbor_alltoallv = um_ineighbor_alltoallv;
    m->coll_ineighbor_alltoallw = um_ineighbor_alltoallw;
}

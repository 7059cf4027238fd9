/*
 * fds: the many-to-one pattern of FDS (Fire Dynamics Simulator), the queue
 * behaviour that gives the long lists at rank 0 in Ghazimirsaeed et al.
 * (ParCo 2019, Fig. 1(d), 6(g-h), 8(c-d), 9(d)): every rank sends to rank 0
 * through MPI_Gatherv, MPI_Gather and point-to-point messages, and rank 0
 * takes them in an order that does not match their arrival.
 *
 *   mpirun -np N fds [--size DEVICES] [--iters STEPS] [--stats]
 *
 * A step, on each rank r > 0: `devices(r)` device readings to rank 0 (size of
 * them, three times as many on every fourth rank: meshes differ), sent as soon
 * as they are computed, one message each, tagged by device; GATHERVS calls of
 * MPI_Gatherv of r's output quantities (1 to 4 values) and one MPI_Gather to
 * rank 0; a status message to rank 0; its two mesh-boundary messages to its
 * ring neighbours; and MPI_Allreduce of the time step, the only call that
 * waits for rank 0. Rank 0 posts its receives for every rank's status (rank
 * order) at the start of the step, before anything arrives, does the
 * gathers, and only then receives the device readings, device by device over
 * the ranks, while they arrived rank by rank. So rank 0's unexpected queue
 * holds up to (GATHERVS + devices) * (N - 1) elements, collective and
 * point-to-point mixed, and its posted queue N - 1 status receives that the
 * collective messages must pass.
 * Checks: rank 0 checks every gathered value, reading and status (each is a
 * function of rank, step and index); every rank its boundary messages and the
 * reduced time step.
 */
#include "examples/proxies/proxy.h"

enum { GATHERVS = 6, DEVICE_TAG = 1000, STATUS_TAG = 1, HALO_TAG = 2 };

static int devices(long size, int rank)
{
    return (int) size * (rank % 4 == 1 ? 3 : 1);
}

/* The values everyone can recompute: kind 0 device reading, 1 gatherv, 2 gather, 3 status, 4 halo. */
static double value(int kind, int rank, long step, int a, int b)
{
    return proxy_unit(((((uint64_t) kind * 1048576 + (uint64_t) rank) * 65536 + (uint64_t) step) * 4096 +
                       (uint64_t) a) * 64 + (uint64_t) b);
}

static int gatherv_count(int rank, int q)
{
    return 1 + (rank + q) % 4;
}

int main(int argc, char **argv)
{
    proxy_t p;
    proxy_init(&p, "fds", argc, argv, 8, 10, "device readings per rank and step (x3 on every 4th rank)");
    const int np = p.np, me = p.rank, max_devices = devices(p.size, 1);
    const int left = (me - 1 + np) % np, right = (me + 1) % np;
    double *readings = malloc(sizeof(double) * (size_t) max_devices);
    double *gathered = malloc(sizeof(double) * 4 * (size_t) np);
    double *statuses = malloc(sizeof(double) * (size_t) np);
    int *counts = malloc(sizeof(int) * 2 * (size_t) np);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t) (max_devices + np + 4));
    double checksum = 0;
    PROXY_CHECK(&p, readings && gathered && statuses && counts && req, "out of memory");

    for (long step = 0; step < p.iters; ++step) {
        double halo_in[2], halo_out, status, dt, dt_min, out[4], pair[2], *pairs = gathered;
        int nreq = 0;

        MPI_Irecv(&halo_in[0], 1, MPI_DOUBLE, left, HALO_TAG, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&halo_in[1], 1, MPI_DOUBLE, right, HALO_TAG + 1, MPI_COMM_WORLD, &req[nreq++]);
        if (0 == me) {
            for (int r = 1; r < np; ++r) {
                MPI_Irecv(&statuses[r], 1, MPI_DOUBLE, r, STATUS_TAG, MPI_COMM_WORLD, &req[nreq++]);
            }
        } else {
            for (int d = 0; d < devices(p.size, me); ++d) {
                readings[d] = value(0, me, step, d, 0);
                MPI_Isend(&readings[d], 1, MPI_DOUBLE, 0, DEVICE_TAG + d, MPI_COMM_WORLD, &req[nreq++]);
            }
        }

        /* Output quantities, gathered at rank 0. */
        for (int q = 0; q < GATHERVS; ++q) {
            const int mine = gatherv_count(me, q);
            for (int j = 0; j < mine; ++j) {
                out[j] = value(1, me, step, q, j);
            }
            if (0 == me) {
                int *displs = counts + np;
                for (int r = 0; r < np; ++r) {
                    counts[r] = gatherv_count(r, q);
                    displs[r] = 4 * r;
                }
                MPI_Gatherv(out, mine, MPI_DOUBLE, gathered, counts, displs, MPI_DOUBLE, 0,
                            MPI_COMM_WORLD);
                for (int r = 0; r < np; ++r) {
                    for (int j = 0; j < counts[r]; ++j) {
                        PROXY_CHECK(&p, gathered[4 * r + j] == value(1, r, step, q, j),
                                    "step %ld: gatherv %d: value %d of rank %d wrong", step, q, j, r);
                    }
                }
            } else {
                MPI_Gatherv(out, mine, MPI_DOUBLE, NULL, NULL, NULL, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            }
        }
        pair[0] = value(2, me, step, 0, 0);
        pair[1] = value(2, me, step, 1, 0);
        MPI_Gather(pair, 2, MPI_DOUBLE, pairs, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);

        if (0 == me) {
            /* The device readings, device by device over the ranks. */
            for (int d = 0; d < max_devices; ++d) {
                for (int r = 1; r < np; ++r) {
                    double reading;
                    if (d >= devices(p.size, r)) {
                        continue;
                    }
                    MPI_Recv(&reading, 1, MPI_DOUBLE, r, DEVICE_TAG + d, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    PROXY_CHECK(&p, reading == value(0, r, step, d, 0),
                                "step %ld: reading %d of rank %d wrong", step, d, r);
                    checksum += reading;
                }
            }
            for (int r = 0; r < np; ++r) {
                PROXY_CHECK(&p,
                            pairs[2 * r] == value(2, r, step, 0, 0) &&
                                pairs[2 * r + 1] == value(2, r, step, 1, 0),
                            "step %ld: gathered pair of rank %d wrong", step, r);
            }
        } else {
            status = value(3, me, step, 0, 0);
            MPI_Isend(&status, 1, MPI_DOUBLE, 0, STATUS_TAG, MPI_COMM_WORLD, &req[nreq++]);
        }
        halo_out = value(4, me, step, 0, 0);
        MPI_Isend(&halo_out, 1, MPI_DOUBLE, right, HALO_TAG, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Isend(&halo_out, 1, MPI_DOUBLE, left, HALO_TAG + 1, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        PROXY_CHECK(&p, halo_in[0] == value(4, left, step, 0, 0) && halo_in[1] == value(4, right, step, 0, 0),
                    "step %ld: boundary values wrong", step);
        if (0 == me) {
            for (int r = 1; r < np; ++r) {
                PROXY_CHECK(&p, statuses[r] == value(3, r, step, 0, 0),
                            "step %ld: status of rank %d wrong", step, r);
            }
        }

        dt = 0.01 + value(5, me, step, 0, 0);
        MPI_Allreduce(&dt, &dt_min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        {
            double expect = 1e300;
            for (int r = 0; r < np; ++r) {
                const double x = 0.01 + value(5, r, step, 0, 0);
                expect = x < expect ? x : expect;
            }
            PROXY_CHECK(&p, dt_min == expect, "step %ld: time step %.17g, expected %.17g", step,
                        dt_min, expect);
        }
    }
    free(readings);
    free(gathered);
    free(statuses);
    free(counts);
    free(req);
    return proxy_finish(&p, checksum);
}

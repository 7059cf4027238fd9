/*
 * miniamr: a 3D stencil with halo exchange and checksums, the queue behaviour
 * of MiniAMR in Ghazimirsaeed et al. (ParCo 2019, Fig. 1(c), 8(a-b)): some
 * point-to-point elements (halos), more from collectives (the checksums'
 * allreduces), medium lists.
 *
 *   mpirun -np N miniamr [--size CELLS_PER_SIDE] [--iters STEPS] [--stats]
 *
 * The ranks form a periodic 3D grid (MPI_Dims_create); each owns a block of
 * size^3 cells of VARS variables. A step: every variable's six faces are
 * exchanged with the face neighbours (receives posted variable by variable,
 * face by face, then the sends), then a 7-point averaging stencil. Every
 * CHECKSUM_EVERY steps each variable's sum is reduced with its own
 * MPI_Allreduce, as MiniAMR's checksum stage does; the stencil conserves the
 * sum on a periodic domain, so every checksum must equal the first (relative
 * error below 1e-9). Every REFINE_EVERY steps a mock refinement: MPI_Allgather
 * of the block counts and MPI_Bcast of rank 0's decision, both checked.
 */
#include <math.h>

#include "examples/proxies/proxy.h"

enum { VARS = 4, FACES = 6, CHECKSUM_EVERY = 2, REFINE_EVERY = 5 };

typedef struct grid {
    int n;           /* cells per side, without ghosts */
    double *u[VARS]; /* (n + 2)^3 each, with one ghost layer */
} grid_t;

static inline size_t at(int n, int i, int j, int k)
{
    return ((size_t) i * (size_t) (n + 2) + (size_t) j) * (size_t) (n + 2) + (size_t) k;
}

/* Copies face f of variable v between the block and buf: into the ghost layer
 * when `in`, else from the first interior layer. Faces: -x, +x, -y, +y, -z, +z. */
static void face(grid_t *g, int v, int f, double *buf, int in)
{
    const int n = g->n, axis = f / 2, hi = f % 2;
    const int layer = in ? (hi ? n + 1 : 0) : (hi ? n : 1);
    size_t c = 0;
    for (int a = 1; a <= n; ++a) {
        for (int b = 1; b <= n; ++b) {
            const int i = axis == 0 ? layer : a;
            const int j = axis == 1 ? layer : (axis == 0 ? a : b);
            const int k = axis == 2 ? layer : b;
            double *cell = &g->u[v][at(n, i, j, k)];
            if (in) {
                *cell = buf[c++];
            } else {
                buf[c++] = *cell;
            }
        }
    }
}

static double sum_of(const grid_t *g, int v)
{
    double s = 0;
    for (int i = 1; i <= g->n; ++i) {
        for (int j = 1; j <= g->n; ++j) {
            for (int k = 1; k <= g->n; ++k) {
                s += g->u[v][at(g->n, i, j, k)];
            }
        }
    }
    return s;
}

int main(int argc, char **argv)
{
    proxy_t p;
    proxy_init(&p, "miniamr", argc, argv, 8, 10, "cells per side of each rank's block");
    const int n = (int) p.size, face_cells = n * n;
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3], nbr[FACES];
    MPI_Comm cart;
    grid_t g = {n, {NULL}};
    double *tmp = malloc(sizeof(double) * (size_t) (n + 2) * (size_t) (n + 2) * (size_t) (n + 2));
    double *sendbuf = malloc(sizeof(double) * (size_t) (VARS * FACES * face_cells));
    double *recvbuf = malloc(sizeof(double) * (size_t) (VARS * FACES * face_cells));
    MPI_Request req[2 * VARS * FACES];
    double first[VARS], checksum = 0;
    int *blocks = malloc(sizeof(int) * (size_t) p.np);
    PROXY_CHECK(&p, tmp && sendbuf && recvbuf && blocks, "out of memory");

    /* The grid's neighbours, on MPI_COMM_WORLD's ranks (no reordering), so that
     * all traffic stays on the communicator the statistics are read from. */
    MPI_Dims_create(p.np, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, p.rank, 3, coords);
    for (int axis = 0; axis < 3; ++axis) {
        MPI_Cart_shift(cart, axis, 1, &nbr[2 * axis], &nbr[2 * axis + 1]);
    }
    MPI_Comm_free(&cart);

    for (int v = 0; v < VARS; ++v) {
        g.u[v] = calloc((size_t) (n + 2) * (size_t) (n + 2) * (size_t) (n + 2), sizeof(double));
        PROXY_CHECK(&p, g.u[v] != NULL, "out of memory");
        for (int i = 1; i <= n; ++i) {
            for (int j = 1; j <= n; ++j) {
                for (int k = 1; k <= n; ++k) {
                    const uint64_t key = ((((uint64_t) p.rank * VARS + (uint64_t) v) * 1024 + (uint64_t) i) * 1024 +
                                          (uint64_t) j) * 1024 + (uint64_t) k;
                    g.u[v][at(n, i, j, k)] = proxy_unit(key);
                }
            }
        }
        const double s = sum_of(&g, v);
        MPI_Allreduce(&s, &first[v], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }

    for (long step = 1; step <= p.iters; ++step) {
        int nreq = 0;
        /* Halo exchange: a message per variable and face. Face f of mine is the
         * neighbour's opposite face, so it is tagged by the receiving side's face. */
        for (int v = 0; v < VARS; ++v) {
            for (int f = 0; f < FACES; ++f) {
                MPI_Irecv(recvbuf + (size_t) (v * FACES + f) * face_cells, face_cells, MPI_DOUBLE,
                          nbr[f], v * FACES + f, MPI_COMM_WORLD, &req[nreq++]);
            }
        }
        for (int v = 0; v < VARS; ++v) {
            for (int f = 0; f < FACES; ++f) {
                double *buf = sendbuf + (size_t) (v * FACES + f) * face_cells;
                face(&g, v, f, buf, 0);
                MPI_Isend(buf, face_cells, MPI_DOUBLE, nbr[f], v * FACES + (f ^ 1), MPI_COMM_WORLD,
                          &req[nreq++]);
            }
        }
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        for (int v = 0; v < VARS; ++v) {
            for (int f = 0; f < FACES; ++f) {
                face(&g, v, f, recvbuf + (size_t) (v * FACES + f) * face_cells, 1);
            }
        }

        /* The stencil: each cell becomes the mean of itself and its six neighbours. */
        for (int v = 0; v < VARS; ++v) {
            double *u = g.u[v];
            for (int i = 1; i <= n; ++i) {
                for (int j = 1; j <= n; ++j) {
                    for (int k = 1; k <= n; ++k) {
                        tmp[at(n, i, j, k)] = (u[at(n, i, j, k)] + u[at(n, i - 1, j, k)] +
                                               u[at(n, i + 1, j, k)] + u[at(n, i, j - 1, k)] +
                                               u[at(n, i, j + 1, k)] + u[at(n, i, j, k - 1)] +
                                               u[at(n, i, j, k + 1)]) / 7.0;
                    }
                }
            }
            g.u[v] = tmp;
            tmp = u;
        }

        if (step % CHECKSUM_EVERY == 0) {
            for (int v = 0; v < VARS; ++v) {
                const double s = sum_of(&g, v);
                double total;
                MPI_Allreduce(&s, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                PROXY_CHECK(&p, fabs(total - first[v]) <= 1e-9 * fabs(first[v]),
                            "step %ld: checksum of variable %d is %.17g, was %.17g", step, v, total,
                            first[v]);
                checksum += total;
            }
        }
        if (step % REFINE_EVERY == 0) {
            int mine = 1 + (int) (proxy_hash((uint64_t) step * 65536 + (uint64_t) p.rank) % 8);
            int decision = (int) step;
            MPI_Allgather(&mine, 1, MPI_INT, blocks, 1, MPI_INT, MPI_COMM_WORLD);
            MPI_Bcast(&decision, 1, MPI_INT, 0, MPI_COMM_WORLD);
            PROXY_CHECK(&p, blocks[p.rank] == mine && decision == (int) step,
                        "step %ld: refinement data wrong", step);
            for (int r = 0; r < p.np; ++r) {
                PROXY_CHECK(&p,
                            blocks[r] == 1 + (int) (proxy_hash((uint64_t) step * 65536 + (uint64_t) r) % 8),
                            "step %ld: rank %d's block count wrong", step, r);
            }
        }
    }
    for (int v = 0; v < VARS; ++v) {
        free(g.u[v]);
    }
    free(tmp);
    free(sendbuf);
    free(recvbuf);
    free(blocks);
    return proxy_finish(&p, checksum);
}

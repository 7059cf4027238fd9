/*
 * nbody: a gravitational N-body step loop, the queue behaviour of the Nbody
 * application in Ghazimirsaeed et al. (ParCo 2019, Fig. 1(b), 7(c-d)): most
 * queue elements come from point-to-point traffic, from a few heavy sources.
 *
 *   mpirun -np N nbody [--size BODIES_PER_RANK] [--iters STEPS] [--stats]
 *
 * Ranks sit on a ring. Each step a rank receives its two ring neighbours'
 * bodies in chunks of CHUNK bodies (size / CHUNK messages from each) and a
 * summary (centre of mass) from the ranks at distance 2, 4, 8, ... on either
 * side; it posts all those receives first, neighbour by neighbour, then sends
 * its own, so a neighbour's chunks queue behind the other neighbour's. Forces
 * come from its own bodies, the neighbours', the summaries and every rank's
 * centre of mass from the last step; then MPI_Allgather of the centres of mass
 * and MPI_Allreduce of the kinetic energy and mass.
 * Checks: every message carries (source, step, index) and must be the one its
 * receive expects; the gathered centre of mass of this rank is the one it
 * sent; the gathered masses add up to the reduced total.
 */
#include <math.h>

#include "examples/proxies/proxy.h"

enum { CHUNK = 4, HDR = 3, BODY = 4, MSG = HDR + CHUNK * BODY, SUMMARY = HDR + BODY };

typedef struct body {
    double x[3], m, v[3];
} body_t;

/* Adds the pull of (pos, m) on body b to acc. */
static void pull(const body_t *b, const double *pos, double m, double *acc)
{
    double d[3], r2 = 1e-3; /* softening */
    for (int k = 0; k < 3; ++k) {
        d[k] = pos[k] - b->x[k];
        r2 += d[k] * d[k];
    }
    const double f = m / (r2 * sqrt(r2));
    for (int k = 0; k < 3; ++k) {
        acc[k] += f * d[k];
    }
}

static void check_header(const proxy_t *p, const double *msg, int source, long step, int index)
{
    PROXY_CHECK(p, msg[0] == source && msg[1] == (double) step && msg[2] == index,
                "step %ld: expected (source %d, index %d), got (source %g, step %g, index %g)", step,
                source, index, msg[0], msg[1], msg[2]);
}

int main(int argc, char **argv)
{
    proxy_t p;
    proxy_init(&p, "nbody", argc, argv, 256, 10, "bodies per rank (a multiple of 4)");
    const int n = (int) p.size, np = p.np, me = p.rank;
    const int chunks = (n + CHUNK - 1) / CHUNK;
    const int nbr[2] = {(me - 1 + np) % np, (me + 1) % np}; /* left, right */
    int nfar = 0;
    for (int k = 2; k <= np / 2; k *= 2) {
        ++nfar;
    }
    body_t *bodies = calloc((size_t) chunks * CHUNK, sizeof(body_t));
    double *out = calloc((size_t) chunks * MSG, sizeof(double));        /* my chunks */
    double *in = calloc((size_t) 2 * chunks * MSG, sizeof(double));     /* neighbours' */
    double *far_in = calloc((size_t) 2 * nfar * SUMMARY + 1, sizeof(double));
    double *com_all = calloc((size_t) np * BODY, sizeof(double));
    double(*acc)[3] = calloc((size_t) n, sizeof(*acc));
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t) (4 * chunks + 4 * nfar));
    double checksum = 0;
    PROXY_CHECK(&p, bodies && out && in && far_in && com_all && acc && req, "out of memory");

    for (int i = 0; i < n; ++i) {
        const uint64_t key = (uint64_t) me << 32 | (uint64_t) i;
        bodies[i].x[0] = me + proxy_unit(key * 4 + 0); /* rank r's bodies near x = r */
        bodies[i].x[1] = proxy_unit(key * 4 + 1);
        bodies[i].x[2] = proxy_unit(key * 4 + 2);
        bodies[i].m = 1.0 + proxy_unit(key * 4 + 3);
    }

    for (long step = 0; step < p.iters; ++step) {
        double com[BODY] = {0}, summary[SUMMARY], sums[2], sums_all[2], gathered_mass = 0;
        int nreq = 0;

        /* Receives first, neighbour by neighbour; tags say from which side. */
        for (int side = 0; side < 2; ++side) {
            for (int c = 0; c < chunks; ++c) {
                MPI_Irecv(in + (size_t) (side * chunks + c) * MSG, MSG, MPI_DOUBLE, nbr[side],
                          side * chunks + c, MPI_COMM_WORLD, &req[nreq++]);
            }
        }
        for (int j = 0; j < nfar; ++j) {
            const int k = 2 << j;
            MPI_Irecv(far_in + (size_t) (2 * j) * SUMMARY, SUMMARY, MPI_DOUBLE, (me - k + np) % np,
                      2 * chunks + 2 * j, MPI_COMM_WORLD, &req[nreq++]);
            MPI_Irecv(far_in + (size_t) (2 * j + 1) * SUMMARY, SUMMARY, MPI_DOUBLE, (me + k) % np,
                      2 * chunks + 2 * j + 1, MPI_COMM_WORLD, &req[nreq++]);
        }

        /* My chunks and summary. The right neighbour gets them as from its left. */
        for (int i = 0; i < n; ++i) {
            for (int k = 0; k < 3; ++k) {
                com[k] += bodies[i].m * bodies[i].x[k];
            }
            com[3] += bodies[i].m;
        }
        for (int c = 0; c < chunks; ++c) {
            double *m = out + (size_t) c * MSG;
            m[0] = me;
            m[1] = (double) step;
            m[2] = c;
            for (int b = 0; b < CHUNK; ++b) {
                const body_t *s = &bodies[c * CHUNK + b];
                memcpy(m + HDR + b * BODY, s->x, sizeof(s->x));
                m[HDR + b * BODY + 3] = s->m;
            }
            MPI_Isend(m, MSG, MPI_DOUBLE, nbr[1], c, MPI_COMM_WORLD, &req[nreq++]);
            MPI_Isend(m, MSG, MPI_DOUBLE, nbr[0], chunks + c, MPI_COMM_WORLD, &req[nreq++]);
        }
        summary[0] = me;
        summary[1] = (double) step;
        summary[2] = 0;
        memcpy(summary + HDR, com, sizeof(com));
        for (int j = 0; j < nfar; ++j) {
            const int k = 2 << j;
            MPI_Isend(summary, SUMMARY, MPI_DOUBLE, (me + k) % np, 2 * chunks + 2 * j,
                      MPI_COMM_WORLD, &req[nreq++]);
            MPI_Isend(summary, SUMMARY, MPI_DOUBLE, (me - k + np) % np, 2 * chunks + 2 * j + 1,
                      MPI_COMM_WORLD, &req[nreq++]);
        }
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);

        /* Forces. */
        memset(acc, 0, sizeof(*acc) * (size_t) n);
        for (int side = 0; side < 2; ++side) {
            for (int c = 0; c < chunks; ++c) {
                const double *m = in + (size_t) (side * chunks + c) * MSG;
                check_header(&p, m, nbr[side], step, c);
                for (int i = 0; i < n; ++i) {
                    for (int b = 0; b < CHUNK; ++b) {
                        pull(&bodies[i], m + HDR + b * BODY, m[HDR + b * BODY + 3], acc[i]);
                    }
                }
            }
        }
        for (int j = 0; j < 2 * nfar; ++j) {
            const double *s = far_in + (size_t) j * SUMMARY;
            const int k = 2 << (j / 2);
            check_header(&p, s, j % 2 == 0 ? (me - k + np) % np : (me + k) % np, step, 0);
            if (s[HDR + 3] > 0) {
                const double pos[3] = {s[HDR] / s[HDR + 3], s[HDR + 1] / s[HDR + 3],
                                       s[HDR + 2] / s[HDR + 3]};
                for (int i = 0; i < n; ++i) {
                    pull(&bodies[i], pos, s[HDR + 3], acc[i]);
                }
            }
        }
        for (int i = 0; i < n; ++i) {
            for (int o = 0; o < n; ++o) {
                if (o != i) {
                    pull(&bodies[i], bodies[o].x, bodies[o].m, acc[i]);
                }
            }
            for (int r = 0; r < np; ++r) { /* the far field, a step old */
                const double *c = com_all + (size_t) r * BODY;
                if (r != me && c[3] > 0) {
                    const double pos[3] = {c[0] / c[3], c[1] / c[3], c[2] / c[3]};
                    pull(&bodies[i], pos, c[3] * 0.01, acc[i]);
                }
            }
        }
        sums[0] = sums[1] = 0;
        for (int i = 0; i < n; ++i) {
            for (int k = 0; k < 3; ++k) {
                bodies[i].v[k] += 1e-4 * acc[i][k];
                bodies[i].x[k] += 1e-4 * bodies[i].v[k];
                sums[0] += 0.5 * bodies[i].m * bodies[i].v[k] * bodies[i].v[k];
            }
            sums[1] += bodies[i].m;
        }

        MPI_Allgather(com, BODY, MPI_DOUBLE, com_all, BODY, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Allreduce(sums, sums_all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        PROXY_CHECK(&p, 0 == memcmp(com_all + (size_t) me * BODY, com, sizeof(com)),
                    "step %ld: my gathered centre of mass differs from mine", step);
        for (int r = 0; r < np; ++r) {
            gathered_mass += com_all[(size_t) r * BODY + 3];
        }
        PROXY_CHECK(&p, fabs(gathered_mass - sums_all[1]) <= 1e-9 * sums_all[1],
                    "step %ld: gathered mass %.17g, reduced %.17g", step, gathered_mass, sums_all[1]);
        PROXY_CHECK(&p, isfinite(sums_all[0]), "step %ld: kinetic energy %g", step, sums_all[0]);
        checksum = sums_all[0];
    }
    free(bodies);
    free(out);
    free(in);
    free(far_in);
    free(com_all);
    free(acc);
    free(req);
    return proxy_finish(&p, checksum);
}

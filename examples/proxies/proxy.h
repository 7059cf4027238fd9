/*
 * What the proxy applications share: options, deterministic random numbers,
 * failure, the closing line, and --stats.
 *
 *   mpirun -np N ./PROXY [--size S] [--iters I] [--stats]
 *
 * A proxy checks its own results; on a mismatch it prints "FAIL proxy rank R:
 * why" and aborts (non-zero exit). On success rank 0 prints
 *   PASS proxy np N size S iters I seconds T checksum C
 * With --stats each rank reads the ubermatch PML's MPI_T performance variables
 * of MPI_COMM_WORLD once the work is done; rank 0 gathers them and prints one
 * line per rank, "STATS proxy=NAME np=N rank=R key=value ...", with the keys of
 * proxy_stat_names (pvar pml_ubermatch_KEY). Without the ubermatch PML it
 * prints "STATS unavailable" and exits 0. Exit codes: 0 success, 1 a check
 * failed (MPI_Abort), 2 usage.
 */
#ifndef UBERMATCH_PROXY_H
#define UBERMATCH_PROXY_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct proxy {
    const char *name;
    long size;
    long iters;
    int stats;
    int rank;
    int np;
    double start;
} proxy_t;

static void proxy_fail(const proxy_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void proxy_fail(const proxy_t *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s rank %d: %s\n", p->name, p->rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define PROXY_CHECK(p, cond, ...)                                                                  \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            proxy_fail((p), __VA_ARGS__);                                                          \
        }                                                                                          \
    } while (0)

/* Deterministic values: splitmix64 of a key. */
static inline uint64_t proxy_hash(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A value in [0, 1) from a key. */
static inline double proxy_unit(uint64_t x)
{
    return (double) (proxy_hash(x) >> 11) * (1.0 / 9007199254740992.0);
}

static long proxy_long(const char *s, const char *opt, int rank)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 1) {
        if (0 == rank) {
            fprintf(stderr, "%s needs a whole number >= 1, not '%s'\n", opt, s);
        }
        MPI_Finalize();
        exit(2);
    }
    return v;
}

/* The pvars --stats reads, pml_ubermatch_<name>. */
static const char *const proxy_stat_names[] = {
    "posted_max",       "unexpected_max",        "queues",
    "search_max",       "p2p_searches",          "coll_searches",
    "p2p_inspected",    "coll_inspected",        "p2p_search_ns",
    "coll_search_ns",   "p2p_posted_search_ns",  "coll_posted_search_ns",
    "overhead_ns",      "timer_outliers",        "dedicated_p2p_queues",
    "dedicated_coll_queues",
};
#define PROXY_NSTATS ((int) (sizeof(proxy_stat_names) / sizeof(proxy_stat_names[0])))

/* --stats: a pvar session with a handle per name, allocated at start-up
 * (Open MPI's counters count from when their handle is allocated, so the
 * statistics cover the proxy's work, not MPI_Init); ok is 0 when a pvar is
 * missing. */
static struct {
    int ok;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[PROXY_NSTATS];
} proxy_pvars;

static void proxy_open_stats(void)
{
    int provided, num, found = 0;
    int index[PROXY_NSTATS];

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return;
    }
    MPI_T_pvar_get_num(&num);
    for (int k = 0; k < PROXY_NSTATS; ++k) {
        index[k] = -1;
    }
    for (int i = 0; i < num; ++i) {
        char name[256], desc[256];
        int name_len = sizeof(name), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type,
                                               &enumtype, desc, &desc_len, &bind, &readonly,
                                               &continuous, &atomic) ||
            0 != strncmp(name, "pml_ubermatch_", 14)) {
            continue;
        }
        for (int k = 0; k < PROXY_NSTATS; ++k) {
            if (0 == strcmp(name + 14, proxy_stat_names[k]) && type == MPI_UNSIGNED_LONG_LONG &&
                bind == MPI_T_BIND_MPI_COMM && continuous) {
                index[k] = i;
                ++found;
            }
        }
    }
    if (found != PROXY_NSTATS || MPI_SUCCESS != MPI_T_pvar_session_create(&proxy_pvars.session)) {
        return;
    }
    for (int k = 0; k < PROXY_NSTATS; ++k) {
        MPI_Comm comm = MPI_COMM_WORLD;
        int count;
        if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(proxy_pvars.session, index[k], &comm,
                                                   &proxy_pvars.handle[k], &count) ||
            count != 1) {
            return;
        }
    }
    proxy_pvars.ok = 1;
}

/* Reads the pvars into v and closes the session; 0 without them. */
static int proxy_read_stats(unsigned long long *v)
{
    int ok = proxy_pvars.ok;
    for (int k = 0; ok && k < PROXY_NSTATS; ++k) {
        ok = MPI_SUCCESS == MPI_T_pvar_read(proxy_pvars.session, proxy_pvars.handle[k], &v[k]);
    }
    if (proxy_pvars.ok) {
        for (int k = 0; k < PROXY_NSTATS; ++k) {
            MPI_T_pvar_handle_free(proxy_pvars.session, &proxy_pvars.handle[k]);
        }
        MPI_T_pvar_session_free(&proxy_pvars.session);
    }
    MPI_T_finalize();
    return ok;
}

/* MPI_Init and the options; size_help says what --size is. */
static void proxy_init(proxy_t *p, const char *name, int argc, char **argv, long size, long iters,
                       const char *size_help)
{
    MPI_Init(&argc, &argv);
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->size = size;
    p->iters = iters;
    MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p->np);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--size") && i + 1 < argc) {
            p->size = proxy_long(argv[++i], "--size", p->rank);
        } else if (0 == strcmp(argv[i], "--iters") && i + 1 < argc) {
            p->iters = proxy_long(argv[++i], "--iters", p->rank);
        } else if (0 == strcmp(argv[i], "--stats")) {
            p->stats = 1;
        } else {
            if (0 == p->rank) {
                fprintf(stderr,
                        "usage: mpirun -np N %s [--size S] [--iters I] [--stats]\n"
                        "  --size   %s (default %ld)\n"
                        "  --iters  iterations (default %ld)\n"
                        "  --stats  print the ubermatch engine's statistics, one line per rank\n",
                        name, size_help, size, iters);
            }
            MPI_Finalize();
            exit(0 == strcmp(argv[i], "--help") ? 0 : 2);
        }
    }
    if (p->stats) {
        proxy_open_stats();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    p->start = MPI_Wtime();
}


static void proxy_print_stats(const proxy_t *p)
{
    unsigned long long mine[PROXY_NSTATS + 1] = {0};
    unsigned long long *all = NULL;

    mine[PROXY_NSTATS] = (unsigned long long) proxy_read_stats(mine);
    if (0 == p->rank) {
        all = malloc(sizeof(mine) * (size_t) p->np);
        PROXY_CHECK(p, all != NULL, "out of memory");
    }
    MPI_Gather(mine, PROXY_NSTATS + 1, MPI_UNSIGNED_LONG_LONG, all, PROXY_NSTATS + 1,
               MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (0 != p->rank) {
        return;
    }
    for (int r = 0; r < p->np; ++r) {
        const unsigned long long *v = all + (size_t) r * (PROXY_NSTATS + 1);
        if (0 == v[PROXY_NSTATS]) {
            printf("STATS unavailable (rank %d has no pml_ubermatch pvars)\n", r);
            break;
        }
        printf("STATS proxy=%s np=%d rank=%d", p->name, p->np, r);
        for (int k = 0; k < PROXY_NSTATS; ++k) {
            printf(" %s=%llu", proxy_stat_names[k], v[k]);
        }
        printf("\n");
    }
    fflush(stdout);
    free(all);
}

/* The closing line (and --stats), then MPI_Finalize; returns main's exit code. */
static int proxy_finish(const proxy_t *p, double checksum)
{
    double seconds;
    MPI_Barrier(MPI_COMM_WORLD);
    seconds = MPI_Wtime() - p->start;
    if (p->stats) {
        proxy_print_stats(p);
    }
    if (0 == p->rank) {
        printf("PASS %s np %d size %ld iters %ld seconds %.6f checksum %.17g\n", p->name, p->np,
               p->size, p->iters, seconds, checksum);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}

#endif /* UBERMATCH_PROXY_H */

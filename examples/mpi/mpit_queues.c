/*
 * mpit_queues: read a PML's matching-queue performance variables (MPI_T pvars)
 * around a workload whose queue lengths are known in advance.
 *
 *   mpirun -np N ./mpit_queues [--prefix P] [--check] [--specific] [--verbose] [--list]
 *
 * Every pvar whose name starts with the prefix (default "pml_ubermatch_") is
 * bound to MPI_COMM_WORLD (or to no object, when it is not bound to one) in a
 * pvar session on rank 0 and read at three points of this workload on
 * MPI_COMM_WORLD (N >= 2 ranks; all synchronisation runs on a duplicate of
 * MPI_COMM_WORLD, so no collective traffic touches the measured queues):
 *
 *   1. "after posting":   rank 0 has posted POSTED (100) receives, MPI_ANY_SOURCE
 *                         (or a specific source with --specific), tags
 *                         POSTED_TAG+i, none of them matched yet;
 *   2. "with unexpected": ranks 1..N-1 have each sent BURST (50) messages with
 *                         tags BURST_TAG+j that match none of the posted
 *                         receives, and rank 0 has seen the last message of every
 *                         sender arrive (MPI_Iprobe for it; messages between a
 *                         pair are matched in order, so all earlier ones are in);
 *   3. "drained":         rank 0 has received the burst with exact receives and
 *                         the senders have answered the 100 posted receives.
 *
 * So at point 1 the posted queue holds 100 and the unexpected queue 0; at point
 * 2, 100 and 50*(N-1); at point 3, 0 and 0.
 *
 * --check verifies this for the ubermatch pvars (names <prefix>posted_length and
 * <prefix>unexpected_length, both required) plus invariants of the other
 * ubermatch pvars when they are present (a high-water mark is never below its
 * level, counters never decrease); it exits 1 on any mismatch.
 *
 * --list only lists the pvars with the prefix (all with --prefix ""), binding none:
 * binding every pvar of Open MPI 4.1.4 crashes in mtl_psm2's pvars (not our code).
 *
 * Exit codes: 0 success, 1 --check mismatch or a workload error, 2 no pvar with
 * the prefix, 3 usage error (bad option, fewer than 2 ranks).
 *
 * Pvars with count > 1 (e.g. Open MPI ob1's per-peer queue lengths) are shown as
 * the sum of their elements; --verbose prints every element as well.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    POSTED = 100,      /* receives rank 0 posts before anything arrives */
    BURST = 50,        /* unexpected messages from every other rank */
    POSTED_TAG = 1000, /* tags of the posted receives: POSTED_TAG + i */
    BURST_TAG = 5000,  /* tags of the burst: BURST_TAG + j */
    NPOINTS = 3,
    NAME_LEN = 256,
    DESC_LEN = 1024
};

static const char *point_names[NPOINTS] = {"after posting", "with unexpected", "drained"};

/* One value read from a pvar, whatever its type: integers are kept exactly. */
typedef struct {
    int ok;           /* read succeeded and the type is one we understand */
    int is_float;     /* then d is valid, else i (signed) or u (unsigned) */
    int is_signed;
    unsigned long long u;
    long long i;
    double d;
} value_t;

typedef struct {
    int index;
    char name[NAME_LEN];
    int var_class;
    int bind;
    int continuous;
    int readonly;
    MPI_Datatype type;
    MPI_T_pvar_handle handle;
    int count;
    int allocated;
    int started;
    int usable;       /* handle allocated and type supported */
    const char *why;  /* why not usable */
    value_t sum[NPOINTS];
    value_t *elems[NPOINTS]; /* per element, for --verbose */
} pvar_t;

static const char *class_name(int c) {
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return "STATE";
    case MPI_T_PVAR_CLASS_LEVEL: return "LEVEL";
    case MPI_T_PVAR_CLASS_SIZE: return "SIZE";
    case MPI_T_PVAR_CLASS_PERCENTAGE: return "PERCENTAGE";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return "HIGHWATERMARK";
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return "LOWWATERMARK";
    case MPI_T_PVAR_CLASS_COUNTER: return "COUNTER";
    case MPI_T_PVAR_CLASS_AGGREGATE: return "AGGREGATE";
    case MPI_T_PVAR_CLASS_TIMER: return "TIMER";
    case MPI_T_PVAR_CLASS_GENERIC: return "GENERIC";
    default: return "?";
    }
}

static const char *bind_name(int b) {
    switch (b) {
    case MPI_T_BIND_NO_OBJECT: return "none";
    case MPI_T_BIND_MPI_COMM: return "comm";
    default: return "other";
    }
}

/* Size of one element and how to read it; 0 for a type we do not handle. */
static size_t type_size(MPI_Datatype t) {
    if (t == MPI_UNSIGNED_LONG_LONG) return sizeof(unsigned long long);
    if (t == MPI_UNSIGNED_LONG) return sizeof(unsigned long);
    if (t == MPI_UNSIGNED) return sizeof(unsigned);
    if (t == MPI_INT) return sizeof(int);
    if (t == MPI_LONG) return sizeof(long);
    if (t == MPI_LONG_LONG) return sizeof(long long);
    if (t == MPI_COUNT) return sizeof(MPI_Count);
    if (t == MPI_DOUBLE) return sizeof(double);
    return 0;
}

static int type_signed(MPI_Datatype t) {
    return t == MPI_INT || t == MPI_LONG || t == MPI_LONG_LONG || t == MPI_COUNT;
}

static value_t element(MPI_Datatype t, const void *buf, int k) {
    value_t v;
    memset(&v, 0, sizeof v);
    v.ok = 1;
    if (t == MPI_UNSIGNED_LONG_LONG) {
        v.u = ((const unsigned long long *)buf)[k];
    } else if (t == MPI_UNSIGNED_LONG) {
        v.u = ((const unsigned long *)buf)[k];
    } else if (t == MPI_UNSIGNED) {
        v.u = ((const unsigned *)buf)[k];
    } else if (t == MPI_INT) {
        v.is_signed = 1;
        v.i = ((const int *)buf)[k];
    } else if (t == MPI_LONG) {
        v.is_signed = 1;
        v.i = ((const long *)buf)[k];
    } else if (t == MPI_LONG_LONG) {
        v.is_signed = 1;
        v.i = ((const long long *)buf)[k];
    } else if (t == MPI_COUNT) {
        v.is_signed = 1;
        v.i = (long long)((const MPI_Count *)buf)[k];
    } else if (t == MPI_DOUBLE) {
        v.is_float = 1;
        v.d = ((const double *)buf)[k];
    } else {
        v.ok = 0;
    }
    return v;
}

static void add(value_t *acc, value_t v) {
    if (!v.ok) {
        acc->ok = 0;
        return;
    }
    acc->u += v.u;
    acc->i += v.i;
    acc->d += v.d;
}

/* The value as a signed integer (for --check); doubles are rounded. */
static long long as_ll(value_t v) {
    if (v.is_float) return (long long)(v.d + (v.d >= 0 ? 0.5 : -0.5));
    if (v.is_signed) return v.i;
    return (long long)v.u;
}

static void format_value(char *out, size_t n, value_t v) {
    if (!v.ok) snprintf(out, n, "n/a");
    else if (v.is_float) snprintf(out, n, "%.6g", v.d);
    else if (v.is_signed) snprintf(out, n, "%lld", v.i);
    else snprintf(out, n, "%llu", v.u);
}

static void read_pvar(MPI_T_pvar_session session, pvar_t *p, int point, int verbose) {
    size_t esz = type_size(p->type);
    void *buf = calloc((size_t)(p->count > 0 ? p->count : 1), esz);
    value_t sum;
    memset(&sum, 0, sizeof sum);
    sum.ok = 1;
    if (!buf || MPI_T_pvar_read(session, p->handle, buf) != MPI_SUCCESS) {
        sum.ok = 0;
    } else {
        for (int k = 0; k < p->count; k++) {
            value_t e = element(p->type, buf, k);
            add(&sum, e);
            if (verbose && p->elems[point]) p->elems[point][k] = e;
        }
        sum.is_float = p->type == MPI_DOUBLE;
        sum.is_signed = type_signed(p->type);
    }
    p->sum[point] = sum;
    free(buf);
}

static void die(const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
    fprintf(stderr, "mpit_queues: %s failed: %s\n", what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK_MPI(call)                          \
    do {                                         \
        int rc_ = (call);                        \
        if (rc_ != MPI_SUCCESS) die(#call, rc_); \
    } while (0)

/* Find the pvar named prefix+suffix among the selected ones. */
static pvar_t *find(pvar_t *vars, int n, const char *prefix, const char *suffix) {
    char want[NAME_LEN];
    snprintf(want, sizeof want, "%s%s", prefix, suffix);
    for (int i = 0; i < n; i++)
        if (vars[i].usable && strcmp(vars[i].name, want) == 0) return &vars[i];
    return NULL;
}

static int failures = 0;

static void expect_eq(pvar_t *p, int point, long long want) {
    long long got = as_ll(p->sum[point]);
    int ok = p->sum[point].ok && got == want;
    printf("check: %-40s %-16s = %lld, expected %lld: %s\n", p->name, point_names[point], got, want,
           ok ? "ok" : "MISMATCH");
    if (!ok) failures++;
}

/* A high-water mark is never below the level it tracks. */
static void expect_ge(pvar_t *hwm, pvar_t *level, int point) {
    long long h = as_ll(hwm->sum[point]), l = as_ll(level->sum[point]);
    int ok = hwm->sum[point].ok && level->sum[point].ok && h >= l;
    printf("check: %-40s %-16s = %lld >= %s (%lld): %s\n", hwm->name, point_names[point], h, level->name,
           l, ok ? "ok" : "MISMATCH");
    if (!ok) failures++;
}

/* A counter or high-water mark never decreases between the three readings. */
static void expect_monotonic(pvar_t *p) {
    int ok = 1;
    for (int pt = 1; pt < NPOINTS; pt++)
        if (!p->sum[pt].ok || !p->sum[pt - 1].ok || as_ll(p->sum[pt]) < as_ll(p->sum[pt - 1])) ok = 0;
    printf("check: %-40s never decreases: %s\n", p->name, ok ? "ok" : "MISMATCH");
    if (!ok) failures++;
}

static const char *posted_suffix = "posted_length";
static const char *unexpected_suffix = "unexpected_length";

static void run_checks(pvar_t *vars, int n, const char *prefix, int nsenders) {
    pvar_t *posted = find(vars, n, prefix, posted_suffix);
    pvar_t *unexp = find(vars, n, prefix, unexpected_suffix);
    const long long burst_total = (long long)BURST * nsenders;

    if (!posted || !unexp) {
        printf("check: %s%s and %s%s are required for --check: %s\n", prefix, posted_suffix, prefix,
               unexpected_suffix, "MISSING");
        failures++;
    }
    if (posted) {
        expect_eq(posted, 0, POSTED);
        expect_eq(posted, 1, POSTED);
        expect_eq(posted, 2, 0);
    }
    if (unexp) {
        expect_eq(unexp, 0, 0);
        expect_eq(unexp, 1, burst_total);
        expect_eq(unexp, 2, 0);
    }
    /* Invariants of the optional pvars, checked only when they exist. */
    pvar_t *pmax = find(vars, n, prefix, "posted_max");
    pvar_t *umax = find(vars, n, prefix, "unexpected_max");
    for (int pt = 0; pt < NPOINTS; pt++) {
        if (pmax && posted) expect_ge(pmax, posted, pt);
        if (umax && unexp) expect_ge(umax, unexp, pt);
    }
    static const char *monotonic[] = {"posted_max", "unexpected_max", "search_inspected", "search_max",
                                      "searches", "matches"};
    for (size_t k = 0; k < sizeof monotonic / sizeof *monotonic; k++) {
        pvar_t *p = find(vars, n, prefix, monotonic[k]);
        if (p) expect_monotonic(p);
    }
}

static const char *dashes(int n) {
    static const char line[] = "--------------------------------------------------";
    return line + (sizeof line - 1 - (size_t)n);
}

static void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--prefix P] [--check [--check-names P,U]] [--specific] [--verbose] [--list]\n"
            "  --prefix P   select pvars whose name starts with P (default pml_ubermatch_)\n"
            "  --check      verify the ubermatch queue lengths, exit 1 on mismatch\n"
            "  --check-names P,U  check <prefix>P and <prefix>U instead of <prefix>posted_length and\n"
            "               <prefix>unexpected_length (to try --check on another PML's pvars)\n"
            "  --specific   post the %d receives with a specific source instead of MPI_ANY_SOURCE\n"
            "  --verbose    print every element of pvars with count > 1\n"
            "  --list       only list the pvars with the prefix (\"\" for all), without binding them\n",
            argv0, (int)POSTED);
}

int main(int argc, char **argv) {
    int provided, rank, size;
    const char *prefix = "pml_ubermatch_";
    int check = 0, specific = 0, verbose = 0, list = 0, bad_usage = 0;

    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--prefix") == 0 && a + 1 < argc) prefix = argv[++a];
        else if (strcmp(argv[a], "--check") == 0) check = 1;
        else if (strcmp(argv[a], "--check-names") == 0 && a + 1 < argc) {
            /* POSTED,UNEXPECTED: other suffixes for the two checked levels (to test --check on
             * another PML's pvars, e.g. ob1's with --specific). */
            static char names[2 * NAME_LEN];
            snprintf(names, sizeof names, "%s", argv[++a]);
            char *comma = strchr(names, ',');
            if (!comma) bad_usage = 1;
            else {
                *comma = '\0';
                posted_suffix = names;
                unexpected_suffix = comma + 1;
            }
        }
        else if (strcmp(argv[a], "--specific") == 0) specific = 1;
        else if (strcmp(argv[a], "--verbose") == 0) verbose = 1;
        else if (strcmp(argv[a], "--list") == 0) list = 1;
        else bad_usage = 1;
    }
    if (bad_usage || size < 2) {
        if (rank == 0) {
            if (size < 2) fprintf(stderr, "mpit_queues: needs at least 2 ranks (got %d)\n", size);
            usage(argv[0]);
        }
        MPI_Finalize();
        return 3;
    }

    int tprovided;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &tprovided));

    /* Synchronisation only on ctl, so MPI_COMM_WORLD's queues hold the workload alone. */
    MPI_Comm ctl;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));

    /* Rank 0: enumerate the pvars and keep those with the prefix (first of each name:
     * some Open MPI builds list the same name several times). */
    pvar_t *vars = NULL;
    int nvars = 0, npvars = 0;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    if (rank == 0) {
        CHECK_MPI(MPI_T_pvar_get_num(&npvars));
        vars = calloc((size_t)(npvars > 0 ? npvars : 1), sizeof *vars);
        for (int i = 0; i < npvars; i++) {
            char name[NAME_LEN], desc[DESC_LEN];
            int name_len = NAME_LEN, desc_len = DESC_LEN, verbosity, var_class, bind, readonly, continuous,
                atomic;
            MPI_Datatype type;
            MPI_T_enum enumtype;
            if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                                    &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
                continue; /* e.g. a pvar of a component that was closed */
            if (strncmp(name, prefix, strlen(prefix)) != 0) continue;
            if (list) {
                char tname[MPI_MAX_OBJECT_NAME] = "?";
                int tlen;
                MPI_Type_get_name(type, tname, &tlen);
                printf("pvar %3d %-40s class %-13s bound to %-5s type %-24s%s%s\n", i, name, class_name(var_class),
                       bind_name(bind), tname, continuous ? " continuous" : "", readonly ? " readonly" : "");
            }
            int dup = 0;
            for (int k = 0; k < nvars; k++) dup |= strcmp(vars[k].name, name) == 0;
            if (dup) continue;
            pvar_t *p = &vars[nvars++];
            p->index = i;
            snprintf(p->name, sizeof p->name, "%s", name);
            p->var_class = var_class;
            p->bind = bind;
            p->readonly = readonly;
            p->continuous = continuous;
            p->type = type;
        }
    }
    int found = nvars;
    CHECK_MPI(MPI_Bcast(&found, 1, MPI_INT, 0, ctl));
    if (list || found == 0) {
        if (rank == 0 && found == 0)
            printf("mpit_queues: no MPI_T performance variable starts with \"%s\" (%d pvars in all); "
                   "is the PML that registers them selected?\n",
                   prefix, npvars);
        free(vars);
        MPI_Comm_free(&ctl);
        MPI_T_finalize();
        MPI_Finalize();
        return found ? 0 : 2;
    }

    /* Rank 0: one session, a handle per pvar bound to MPI_COMM_WORLD, started unless continuous. */
    if (rank == 0) {
        CHECK_MPI(MPI_T_pvar_session_create(&session));
        for (int k = 0; k < nvars; k++) {
            pvar_t *p = &vars[k];
            MPI_Comm world = MPI_COMM_WORLD;
            void *obj = NULL;
            if (p->bind == MPI_T_BIND_MPI_COMM) obj = &world;
            else if (p->bind != MPI_T_BIND_NO_OBJECT) {
                p->why = "bound to an object other than a communicator";
                continue;
            }
            if (type_size(p->type) == 0) {
                p->why = "unsupported datatype";
                continue;
            }
            if (MPI_T_pvar_handle_alloc(session, p->index, obj, &p->handle, &p->count) != MPI_SUCCESS) {
                p->why = "MPI_T_pvar_handle_alloc failed";
                continue;
            }
            p->allocated = 1;
            if (!p->continuous) {
                if (MPI_T_pvar_start(session, p->handle) != MPI_SUCCESS) {
                    p->why = "MPI_T_pvar_start failed";
                    continue;
                }
                p->started = 1;
            }
            p->usable = 1;
            if (verbose)
                for (int pt = 0; pt < NPOINTS; pt++)
                    p->elems[pt] = calloc((size_t)(p->count > 0 ? p->count : 1), sizeof(value_t));
        }
    }

    const int nsenders = size - 1;
    int errors = 0;
    CHECK_MPI(MPI_Barrier(ctl));

    if (rank == 0) {
        /* 1. Post the receives the senders will answer at the end. */
        int posted_buf[POSTED][3];
        MPI_Request posted_req[POSTED];
        for (int i = 0; i < POSTED; i++) {
            int src = specific ? 1 + i % nsenders : MPI_ANY_SOURCE;
            CHECK_MPI(MPI_Irecv(posted_buf[i], 3, MPI_INT, src, POSTED_TAG + i, MPI_COMM_WORLD, &posted_req[i]));
        }
        for (int k = 0; k < nvars; k++)
            if (vars[k].usable) read_pvar(session, &vars[k], 0, verbose);

        CHECK_MPI(MPI_Barrier(ctl)); /* B1: receives posted; senders start the burst */
        CHECK_MPI(MPI_Barrier(ctl)); /* B2: every sender has issued its burst */

        /* 2. Wait until the last burst message of every sender has arrived. */
        double deadline = MPI_Wtime() + 30.0;
        for (int s = 1; s < size; s++) {
            int flag = 0;
            while (!flag) {
                CHECK_MPI(MPI_Iprobe(s, BURST_TAG + BURST - 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                if (!flag && MPI_Wtime() > deadline) {
                    fprintf(stderr, "mpit_queues: burst from rank %d did not arrive within 30 s\n", s);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        }
        for (int k = 0; k < nvars; k++)
            if (vars[k].usable) read_pvar(session, &vars[k], 1, verbose);

        /* 3. Drain the burst with exact receives, then let the senders answer the posted receives. */
        for (int s = 1; s < size; s++) {
            for (int j = 0; j < BURST; j++) {
                int msg[3];
                CHECK_MPI(MPI_Recv(msg, 3, MPI_INT, s, BURST_TAG + j, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                if (msg[0] != s || msg[1] != BURST_TAG + j || msg[2] != j) errors++;
            }
        }
        CHECK_MPI(MPI_Barrier(ctl)); /* B3: burst drained; senders answer the posted receives */
        MPI_Status st[POSTED];
        CHECK_MPI(MPI_Waitall(POSTED, posted_req, st));
        for (int i = 0; i < POSTED; i++) {
            int want_src = 1 + i % nsenders;
            if (st[i].MPI_SOURCE != want_src || st[i].MPI_TAG != POSTED_TAG + i || posted_buf[i][0] != want_src ||
                posted_buf[i][1] != POSTED_TAG + i || posted_buf[i][2] != i)
                errors++;
        }
        for (int k = 0; k < nvars; k++)
            if (vars[k].usable) read_pvar(session, &vars[k], 2, verbose);
    } else {
        int burst[BURST][3];
        MPI_Request burst_req[BURST];
        CHECK_MPI(MPI_Barrier(ctl)); /* B1 */
        for (int j = 0; j < BURST; j++) {
            burst[j][0] = rank;
            burst[j][1] = BURST_TAG + j;
            burst[j][2] = j;
            CHECK_MPI(MPI_Isend(burst[j], 3, MPI_INT, 0, BURST_TAG + j, MPI_COMM_WORLD, &burst_req[j]));
        }
        CHECK_MPI(MPI_Barrier(ctl)); /* B2 */
        CHECK_MPI(MPI_Barrier(ctl)); /* B3 */
        CHECK_MPI(MPI_Waitall(BURST, burst_req, MPI_STATUSES_IGNORE));
        /* Answer posted receive i when it is ours: i % nsenders == rank - 1. */
        for (int i = rank - 1; i < POSTED; i += nsenders) {
            int msg[3] = {rank, POSTED_TAG + i, i};
            CHECK_MPI(MPI_Send(msg, 3, MPI_INT, 0, POSTED_TAG + i, MPI_COMM_WORLD));
        }
    }

    int total_errors = 0;
    CHECK_MPI(MPI_Reduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, 0, ctl));

    int rc = 0;
    if (rank == 0) {
        printf("mpit_queues: %d ranks, prefix \"%s\", rank 0 posted %d %s receives, %d unexpected messages "
               "(%d from each of %d senders)\n",
               size, prefix, (int)POSTED, specific ? "source-specific" : "MPI_ANY_SOURCE", BURST * nsenders,
               (int)BURST, nsenders);
        printf("\n| %-40s | %-13s | %-7s | %13s | %15s | %9s |\n", "pvar", "class", "count", point_names[0],
               point_names[1], point_names[2]);
        printf("|%s|%s|%s|%s|%s|%s|\n", dashes(42), dashes(15), dashes(9), dashes(15), dashes(17), dashes(11));
        for (int k = 0; k < nvars; k++) {
            pvar_t *p = &vars[k];
            if (!p->usable) continue;
            char v[NPOINTS][64];
            for (int pt = 0; pt < NPOINTS; pt++) format_value(v[pt], sizeof v[pt], p->sum[pt]);
            char cnt[16];
            snprintf(cnt, sizeof cnt, p->count > 1 ? "%d (sum)" : "%d", p->count);
            printf("| %-40s | %-13s | %-7s | %13s | %15s | %9s |\n", p->name, class_name(p->var_class), cnt, v[0],
                   v[1], v[2]);
        }
        for (int k = 0; k < nvars; k++) {
            pvar_t *p = &vars[k];
            if (!p->usable)
                printf("skipped %s (class %s, bound to %s): %s\n", p->name, class_name(p->var_class),
                       bind_name(p->bind), p->why);
            else if (verbose && p->count > 1)
                for (int pt = 0; pt < NPOINTS; pt++) {
                    printf("%s %s:", p->name, point_names[pt]);
                    for (int e = 0; e < p->count; e++) {
                        char s[64];
                        format_value(s, sizeof s, p->elems[pt][e]);
                        printf(" [%d]=%s", e, s);
                    }
                    printf("\n");
                }
        }
        printf("(MPI_T semantics: COUNTER, AGGREGATE and TIMER pvars count from when their handle was allocated\n"
               " or started, not from MPI_Init; watermarks are the extreme seen since then.)\n");
        printf("\nworkload: %d message errors\n", total_errors);
        if (total_errors) rc = 1;
        if (check) {
            printf("\n");
            run_checks(vars, nvars, prefix, nsenders);
            printf("check: %s (%d mismatches)\n", failures ? "FAILED" : "passed", failures);
            if (failures) rc = 1;
        }

        for (int k = 0; k < nvars; k++) {
            pvar_t *p = &vars[k];
            if (p->started) MPI_T_pvar_stop(session, p->handle);
            if (p->allocated) MPI_T_pvar_handle_free(session, &p->handle);
            for (int pt = 0; pt < NPOINTS; pt++) free(p->elems[pt]);
        }
        MPI_T_pvar_session_free(&session);
        fflush(stdout);
    }
    CHECK_MPI(MPI_Bcast(&rc, 1, MPI_INT, 0, ctl));

    free(vars);
    MPI_Comm_free(&ctl);
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
}

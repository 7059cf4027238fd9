/*
 * queue_bench: message rate and bandwidth of a window of messages matched behind
 * a deep matching queue (the method of Dosanjh et al., "Fuzzy matching", section
 * VI-A: an OSU-style window of nonblocking sends, receives pre-posted behind a
 * synchronisation, optionally the cache cleared between iterations, and N
 * entries that never match placed in the queue first).
 *
 *   mpirun -np P ./queue_bench [options]
 *
 * Rank 0 receives. Window message j (0 <= j < W) comes from rank 1 + j % K (K =
 * --senders, default 1: rank 1 sends the whole window). Queued entry i (0 <= i < N)
 * belongs to rank 1 + i % (P-1) and has tag FILL_TAG + i: all tags distinct, none
 * the window's DATA_TAG. So at P = 2 everything comes from rank 1; at P > 2 (the
 * multi-peer variant) the N entries are spread over all P-1 other ranks while the
 * window still comes from rank 1: a per-peer engine (ob1, perpeer) searches the
 * N/(P-1) entries of rank 1, a single list all N. Ranks with no part in the window
 * sleep (usleep in an MPI_Ibarrier/MPI_Test loop) so that an oversubscribed run
 * leaves the CPUs to the two that work.
 *
 * Shapes (what sits in the queue before the window):
 *   posted      N exact receives (source 1 + i % (P-1), tag FILL_TAG + i), posted
 *               once before the point; each iteration the receiver posts the W
 *               window receives (exact source, DATA_TAG) behind them, then lets
 *               the senders go; each arriving message searches the posted queue.
 *   anysrc      as posted, the N receives with MPI_ANY_SOURCE.
 *   unexpected  every other rank sends its N/(P-1) 8-byte messages (tags FILL_TAG + i)
 *               once before the point, then a marker; the receiver waits for the
 *               markers, so all N are queued as unexpected. Each iteration the
 *               senders send their window and a marker; the receiver takes the
 *               markers and only then posts the W window receives, each of which
 *               searches the unexpected queue behind the N messages.
 *
 * One iteration (the receiver's clock): [flush] [post window: posted shapes]
 * t0, MPI_Bcast of "go" to the window's senders, [markers, post window:
 * unexpected], MPI_Waitall of the window, t1. The flush and the posting of
 * pre-posted receives are outside [t0, t1]; everything from the go message to
 * the last window message received is inside. All synchronisation and markers
 * travel on duplicates of MPI_COMM_WORLD, so only the window and the N entries
 * are ever in the measured communicator's queues. Markers rely on a PML
 * delivering one sender's messages in order across communicators (shared-memory
 * FIFOs: ob1/vader, pml_ucx and ubermatch over UCX all do; with ubermatch,
 * pml_ubermatch_print_stats shows the unexpected queue reaching N + W and no
 * window message matching on arrival).
 *
 * --flush SIZE: before every iteration rank 0 and the window's senders write over
 * a SIZE-byte buffer, then meet in a barrier (untimed), so each iteration starts
 * with the matching structures out of the caches that SIZE covers (seed 003 clears
 * the cache between iterations to model a computation phase).
 *
 * After a point, posted entries are cancelled (MPI_Cancel; one not reported
 * cancelled is an error: a window message matched it) and unexpected ones
 * received, and the program checks that nothing is left (MPI_Iprobe).
 *
 * A point = (shape, N, window message size). Per point: a warm-up of at least 2
 * iterations and 10% of --time, which calibrates the iterations so that the R
 * repetitions take about --time seconds (wall, flush included). Each iteration
 * is timed on its own. A repetition's rate is W / (its median iteration time):
 * a VM's vCPU preempted by the host stalls single iterations for milliseconds,
 * which a mean over few cold iterations cannot absorb; its mean rate, W *
 * iterations / their summed time, is reported beside it. Reported: the median
 * over repetitions (value), their min and max, and the median of the mean rates.
 *
 * Options:
 *   --points LIST  comma-separated SHAPE:N[:SIZE] (e.g. posted:0,anysrc:1024:8)
 *   --shapes LIST  shapes of the sweep (default posted,anysrc,unexpected)   } used
 *   --depths LIST  N of the sweep (default 0,16,128,1024,8192)               } without
 *   --sizes LIST   window message sizes, bytes, K/M suffix (default 8)     } --points
 *   --window W     messages per window (default 64)
 *   --senders K    ranks 1..K send the window (default 1)
 *   --reps R       repetitions, the median is reported (default 5)
 *   --time T       seconds per point for the R repetitions together (default 1)
 *   --iters I      iterations per repetition (instead of calibrating)
 *   --flush SIZE   bytes written over before every iteration (K/M/G suffix; "llc":
 *                  twice the last-level cache; default 0: off)
 *   --info KEYS    comma-separated info keys set to "true" on the measured
 *                  communicator (MPI_Comm_dup_with_info), e.g.
 *                  mpi_assert_no_any_source,mpi_assert_no_any_tag (docs/relaxed.md);
 *                  the final leftover check then probes each sender's window tag
 *                  instead of MPI_ANY_SOURCE/MPI_ANY_TAG, which the keys may rule out
 *
 * Output, on rank 0, one line per point:
 *   shape=posted depth=1024 size=8 np=2 senders=1 window=64 value=1234567.8 min=... max=... mean=... unit=msg/s
 *   reps=5 iters=123 flush=0
 * (one line) then a human-readable line starting with '#'. Bandwidth = value * size.
 * Exit codes: 0 success, 1 a cleanup check failed, 2 usage error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DATA_TAG = 1, MARK_TAG = 2, FILL_TAG = 16, FILL_SIZE = 8, MAX_REPS = 1000, MAX_POINTS = 512, MAX_ITERS = 1000000 };

typedef enum { POSTED, ANYSRC, UNEXPECTED, SHAPE_COUNT } shape_t;
static const char *const shape_names[SHAPE_COUNT] = {"posted", "anysrc", "unexpected"};

typedef struct {
    shape_t shape;
    long depth;
    size_t size;
} point_t;

static int rank, nprocs, window = 64, senders = 1; /* senders: ranks 1..senders send the window */
static MPI_Comm data_comm, sync_comm, act_comm;     /* act_comm: rank 0 and the window's senders */
static char *sbuf, *rbuf, *fbuf;         /* window send buffer, window receive buffers, filler buffers */
static unsigned char *flush_buf;
static size_t flush_len;
static MPI_Request *wreq, *freq;          /* window requests, filler requests */
static int failures;
static int asserted; /* --info: the measured communicator carries assertions */

/* The owner of queued entry i: spread over all other ranks. */
static int owner_of(long i) { return 1 + (int)(i % (nprocs - 1)); }
/* The sender of window message j: spread over the active senders. */
static int sender_of(int j) { return 1 + j % senders; }

/* A barrier that sleeps while it waits. The ranks with no part in the window wait
 * here for the whole point, sleeping 2 ms between tests, so that an oversubscribed
 * run leaves the CPUs to rank 0 and the window's senders (with 100 us, 6 idle ranks
 * of np 8 still cut the depth-0 rate to a fifth). */
static void lazy_barrier(void) {
    MPI_Request r;
    int done = 0;
    MPI_Ibarrier(sync_comm, &r);
    for (;;) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) break;
        usleep(rank <= senders ? 50 : 2000);
    }
}

/* Rank 0 and the active senders write over the flush buffer, then wait for each
 * other: the timed part never includes a peer still flushing. */
static void flush_cache(void) {
    static unsigned char v;
    if (!flush_len) return;
    memset(flush_buf, ++v, flush_len);
    MPI_Barrier(act_comm);
}

/* Receiver: post the window's receives, message j into its own buffer. */
static void post_window(size_t size) {
    for (int j = 0; j < window; j++)
        MPI_Irecv(rbuf + (size_t)j * size, (int)size, MPI_BYTE, sender_of(j), DATA_TAG, data_comm, &wreq[j]);
}

static void recv_markers(int from) {
    for (int s = 1; s <= from; s++) MPI_Recv(NULL, 0, MPI_BYTE, s, MARK_TAG, sync_comm, MPI_STATUS_IGNORE);
}

/* Places the N entries of a point in the receiver's queue. */
static void setup(const point_t *p) {
    if (rank == 0) {
        if (p->shape == UNEXPECTED) {
            recv_markers(nprocs - 1); /* every rank's entries are queued before its marker */
        } else {
            for (long i = 0; i < p->depth; i++)
                MPI_Irecv(fbuf + i * FILL_SIZE, FILL_SIZE, MPI_BYTE, p->shape == ANYSRC ? MPI_ANY_SOURCE : owner_of(i),
                          FILL_TAG + (int)i, data_comm, &freq[i]);
        }
    } else if (p->shape == UNEXPECTED) {
        long k = 0;
        for (long i = 0; i < p->depth; i++)
            if (owner_of(i) == rank) MPI_Isend(sbuf, FILL_SIZE, MPI_BYTE, 0, FILL_TAG + (int)i, data_comm, &freq[k++]);
        MPI_Send(NULL, 0, MPI_BYTE, 0, MARK_TAG, sync_comm);
        MPI_Waitall((int)k, freq, MPI_STATUSES_IGNORE);
    }
}

/* Takes the N entries out again and checks that nothing else is left. */
static void cleanup(const point_t *p) {
    if (rank == 0) {
        if (p->shape == UNEXPECTED) {
            for (long i = 0; i < p->depth; i++)
                MPI_Irecv(fbuf + i * FILL_SIZE, FILL_SIZE, MPI_BYTE, owner_of(i), FILL_TAG + (int)i, data_comm,
                          &freq[i]);
            MPI_Waitall((int)p->depth, freq, MPI_STATUSES_IGNORE);
        } else {
            for (long i = 0; i < p->depth; i++) MPI_Cancel(&freq[i]);
            long not_cancelled = 0;
            for (long i = 0; i < p->depth; i++) {
                MPI_Status st;
                int c = 0;
                MPI_Wait(&freq[i], &st);
                MPI_Test_cancelled(&st, &c);
                not_cancelled += !c;
            }
            if (not_cancelled) {
                fprintf(stderr, "queue_bench: %s N=%ld: %ld queued receives matched a message\n",
                        shape_names[p->shape], p->depth, not_cancelled);
                failures++;
            }
        }
    }
    lazy_barrier(); /* every send of the point has completed */
    if (rank == 0) {
        int flag = 0;
        MPI_Status st;
        if (!asserted) {
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, data_comm, &flag, &st);
        }
        for (int s = 1; asserted && s < nprocs && !flag; s++) {
            MPI_Iprobe(s, DATA_TAG, data_comm, &flag, &st);
        }
        if (flag) {
            fprintf(stderr, "queue_bench: %s N=%ld: a message (source %d, tag %d) was left over\n",
                    shape_names[p->shape], p->depth, st.MPI_SOURCE, st.MPI_TAG);
            failures++;
        }
    }
    lazy_barrier(); /* no rank starts the next point before the check */
}

/* Receiver: one iteration, returns the timed part (seconds). */
static double recv_iteration(const point_t *p) {
    int go = 1;
    flush_cache();
    if (p->shape != UNEXPECTED) post_window(p->size);
    double t0 = MPI_Wtime();
    MPI_Bcast(&go, 1, MPI_INT, 0, act_comm);
    if (p->shape == UNEXPECTED) {
        recv_markers(senders); /* the window has arrived and waits as unexpected */
        post_window(p->size);
    }
    MPI_Waitall(window, wreq, MPI_STATUSES_IGNORE);
    return MPI_Wtime() - t0;
}

static void recv_stop(void) {
    int go = 0;
    flush_cache(); /* the senders flush before every go */
    MPI_Bcast(&go, 1, MPI_INT, 0, act_comm);
}

/* Active sender: iterations until the receiver says stop. */
static void sender_loop(const point_t *p) {
    for (;;) {
        int go;
        flush_cache();
        MPI_Bcast(&go, 1, MPI_INT, 0, act_comm);
        if (!go) break;
        int k = 0;
        for (int j = 0; j < window; j++)
            if (sender_of(j) == rank) MPI_Isend(sbuf, (int)p->size, MPI_BYTE, 0, DATA_TAG, data_comm, &wreq[k++]);
        if (p->shape == UNEXPECTED) MPI_Send(NULL, 0, MPI_BYTE, 0, MARK_TAG, sync_comm);
        MPI_Waitall(k, wreq, MPI_STATUSES_IGNORE);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n sorted values. */
static double median_of(const double *v, long n) { return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }

static void run_point(const point_t *p, int reps, long fixed_iters, double target) {
    setup(p);
    if (rank != 0) {
        if (rank <= senders) sender_loop(p); /* the others sleep in cleanup's barrier */
        cleanup(p);
        return;
    }
    /* Warm-up and calibration: at least 2 iterations and 10% of the target time. */
    long it = 0;
    double w0 = MPI_Wtime(), wall = 0;
    while (it < 2 || (fixed_iters == 0 && wall < 0.1 * target && it < 100000)) {
        recv_iteration(p);
        it++;
        wall = MPI_Wtime() - w0;
    }
    long iters = fixed_iters;
    if (iters == 0) {
        double per_iter = wall / (double)it;
        double n = target / reps / per_iter;
        iters = n < 1 ? 1 : n > MAX_ITERS ? MAX_ITERS : (long)n;
    }
    /* Per repetition: the window rate of its median iteration (robust against the
     * host's preemptions of a vCPU, which hit single iterations with milliseconds)
     * and its mean rate, W * iterations / their summed time. */
    double rate[MAX_REPS], mean[MAX_REPS];
    double *t = malloc((size_t)iters * sizeof *t);
    if (!t) {
        fprintf(stderr, "queue_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < reps; r++) {
        double sum = 0;
        for (long i = 0; i < iters; i++) sum += t[i] = recv_iteration(p);
        qsort(t, (size_t)iters, sizeof t[0], cmp_double);
        rate[r] = (double)window / median_of(t, iters);
        mean[r] = (double)window * (double)iters / sum;
    }
    free(t);
    recv_stop();
    cleanup(p);
    qsort(rate, (size_t)reps, sizeof rate[0], cmp_double);
    qsort(mean, (size_t)reps, sizeof mean[0], cmp_double);
    double median = median_of(rate, reps);
    printf("shape=%s depth=%ld size=%zu np=%d senders=%d window=%d value=%.1f min=%.1f max=%.1f mean=%.1f unit=msg/s "
           "reps=%d iters=%ld flush=%zu\n",
           shape_names[p->shape], p->depth, p->size, nprocs, senders, window, median, rate[0], rate[reps - 1],
           median_of(mean, reps), reps, iters, flush_len);
    printf("# %s N=%ld, %zu B, np %d: %.4g msg/s = %.4g MB/s (median of %d reps x %ld windows of %d; min %.4g, "
           "max %.4g; mean rate %.4g)\n",
           shape_names[p->shape], p->depth, p->size, nprocs, median, median * (double)p->size / 1e6, reps, iters,
           window, rate[0], rate[reps - 1], median_of(mean, reps));
    fflush(stdout);
}

static int parse_size(const char *s, size_t *out) {
    if (strcmp(s, "llc") == 0) {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
        *out = llc > 0 ? 2 * (size_t)llc : (size_t)64 << 20;
        return 1;
    }
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k') v <<= 10, end++;
    else if (*end == 'M' || *end == 'm') v <<= 20, end++;
    else if (*end == 'G' || *end == 'g') v <<= 30, end++;
    if (*end != '\0' || v > (1ULL << 34)) return 0;
    *out = (size_t)v;
    return 1;
}

static int parse_shape(const char *s, size_t len, shape_t *out) {
    for (int k = 0; k < SHAPE_COUNT; k++)
        if (strlen(shape_names[k]) == len && strncmp(s, shape_names[k], len) == 0) return *out = (shape_t)k, 1;
    return 0;
}

/* Splits a comma-separated list in place; returns the number of items (at most max). */
static int split(char *s, char **items, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max) return -1;
        items[n++] = tok;
    }
    return n;
}

static void usage(void) {
    if (rank == 0)
        fprintf(stderr,
                "usage: queue_bench [--points SHAPE:N[:SIZE],...] [--shapes LIST] [--depths LIST] [--sizes LIST]\n"
                "                   [--window W] [--senders K] [--reps R] [--time T] [--iters I] [--flush SIZE|llc]\n"
                "                   [--info KEY,KEY...]\n"
                "  shapes: posted, anysrc, unexpected; rank 0 receives, ranks 1..P-1 send\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int reps = 5, ok = 1;
    long fixed_iters = 0;
    double target = 1.0;
    char *points_arg = NULL, *shapes_arg = NULL, *depths_arg = NULL, *sizes_arg = NULL, *info_arg = NULL;
    for (int a = 1; a < argc && ok; a++) {
        const char *opt = argv[a];
        if (a + 1 >= argc) ok = 0;
        else if (strcmp(opt, "--points") == 0) points_arg = argv[++a];
        else if (strcmp(opt, "--shapes") == 0) shapes_arg = argv[++a];
        else if (strcmp(opt, "--depths") == 0) depths_arg = argv[++a];
        else if (strcmp(opt, "--sizes") == 0) sizes_arg = argv[++a];
        else if (strcmp(opt, "--senders") == 0) senders = atoi(argv[++a]), ok = senders > 0;
        else if (strcmp(opt, "--window") == 0) window = atoi(argv[++a]), ok = window > 0 && window <= 65536;
        else if (strcmp(opt, "--reps") == 0) reps = atoi(argv[++a]), ok = reps > 0 && reps <= MAX_REPS;
        else if (strcmp(opt, "--time") == 0) target = atof(argv[++a]), ok = target > 0;
        else if (strcmp(opt, "--iters") == 0) fixed_iters = atol(argv[++a]), ok = fixed_iters > 0;
        else if (strcmp(opt, "--flush") == 0) ok = parse_size(argv[++a], &flush_len);
        else if (strcmp(opt, "--info") == 0) info_arg = argv[++a];
        else ok = 0;
    }
    if (info_arg) {
        MPI_Info info;
        char keys[1024], *save = NULL;
        MPI_Info_create(&info);
        snprintf(keys, sizeof keys, "%s", info_arg);
        for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save)) MPI_Info_set(info, k, "true");
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &data_comm);
        MPI_Info_free(&info);
        asserted = 1;
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &data_comm);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &sync_comm);

    /* The points: --points, or shapes x depths x sizes. */
    static point_t points[MAX_POINTS];
    int npoints = 0;
    char *items[MAX_POINTS];
    if (ok && points_arg) {
        int n = split(points_arg, items, MAX_POINTS);
        ok = n > 0;
        for (int k = 0; k < n && ok; k++) {
            point_t *p = &points[npoints++];
            char *c1 = strchr(items[k], ':');
            p->size = 8;
            ok = c1 && parse_shape(items[k], (size_t)(c1 - items[k]), &p->shape);
            if (ok) {
                char *c2 = strchr(c1 + 1, ':');
                if (c2) *c2 = '\0', ok = parse_size(c2 + 1, &p->size);
                char *end;
                p->depth = strtol(c1 + 1, &end, 10);
                ok = ok && end != c1 + 1 && *end == '\0' && p->depth >= 0;
            }
        }
    } else if (ok) {
        char def_shapes[] = "posted,anysrc,unexpected", def_depths[] = "0,16,128,1024,8192", def_sizes[] = "8";
        char *sh[SHAPE_COUNT * 4], *de[64], *si[16];
        int nsh = split(shapes_arg ? shapes_arg : def_shapes, sh, SHAPE_COUNT * 4);
        int nde = split(depths_arg ? depths_arg : def_depths, de, 64);
        int nsi = split(sizes_arg ? sizes_arg : def_sizes, si, 16);
        ok = nsh > 0 && nde > 0 && nsi > 0 && (long)nsh * nde * nsi <= MAX_POINTS;
        for (int a = 0; a < nsh && ok; a++)
            for (int b = 0; b < nsi && ok; b++)
                for (int c = 0; c < nde && ok; c++) {
                    point_t *p = &points[npoints++];
                    char *end;
                    ok = parse_shape(sh[a], strlen(sh[a]), &p->shape) && parse_size(si[b], &p->size);
                    p->depth = strtol(de[c], &end, 10);
                    ok = ok && end != de[c] && *end == '\0' && p->depth >= 0;
                }
    }
    long max_depth = 0;
    size_t max_size = 1;
    for (int k = 0; k < npoints; k++) {
        if (points[k].depth > max_depth) max_depth = points[k].depth;
        if (points[k].size > max_size) max_size = points[k].size;
        if (points[k].size > (size_t)1 << 30) ok = 0;
    }
    void *tag_ub;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (ok && flag && max_depth + FILL_TAG > *(int *)tag_ub) {
        if (rank == 0) fprintf(stderr, "queue_bench: N %ld exceeds MPI_TAG_UB %d\n", max_depth, *(int *)tag_ub);
        ok = 0;
    }
    if (ok && senders > nprocs - 1) {
        if (rank == 0) fprintf(stderr, "queue_bench: --senders %d needs at least %d ranks\n", senders, senders + 1);
        ok = 0;
    }
    if (!ok || nprocs < 2) {
        if (rank == 0 && nprocs < 2) fprintf(stderr, "queue_bench: needs at least 2 ranks\n");
        usage();
        MPI_Finalize();
        return 2;
    }

    MPI_Comm_split(sync_comm, rank <= senders ? 0 : MPI_UNDEFINED, rank, &act_comm);
    sbuf = malloc(max_size);
    rbuf = malloc((size_t)window * max_size);
    fbuf = malloc((size_t)(max_depth ? max_depth : 1) * FILL_SIZE);
    wreq = malloc((size_t)window * sizeof *wreq);
    freq = malloc((size_t)(max_depth ? max_depth : 1) * sizeof *freq);
    flush_buf = flush_len ? malloc(flush_len) : NULL;
    if (!sbuf || !rbuf || !fbuf || !wreq || !freq || (flush_len && !flush_buf)) {
        fprintf(stderr, "queue_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a' + rank % 26, max_size);
    memset(rbuf, 0, (size_t)window * max_size); /* touch the pages before timing */
    memset(fbuf, 0, (size_t)(max_depth ? max_depth : 1) * FILL_SIZE);
    if (flush_len) memset(flush_buf, 0, flush_len);

    for (int k = 0; k < npoints; k++) run_point(&points[k], reps, fixed_iters, target);

    int any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    free(sbuf), free(rbuf), free(fbuf), free(wreq), free(freq), free(flush_buf);
    MPI_Comm_free(&data_comm);
    if (act_comm != MPI_COMM_NULL) MPI_Comm_free(&act_comm);
    MPI_Comm_free(&sync_comm);
    MPI_Finalize();
    return any ? 1 : 0;
}

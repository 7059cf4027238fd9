/*
 * p2p_bench: point-to-point latency, message rate and bandwidth between 2 ranks.
 *
 *   mpirun -np 2 ./p2p_bench [--iters N] [--reps R] [--time T] [--thread-multiple] [--strided]
 *                            MODE [SIZE[,SIZE...]]
 *
 * MODE
 *   latency  ping-pong of SIZE bytes (default 8): one-way latency in us,
 *            i.e. round-trip time / 2
 *   rate     windows of 64 MPI_Isend of SIZE bytes (default 8) from rank 0; rank 1
 *            has the window's 64 MPI_Irecv posted before the window is sent, waits
 *            for them, then sends a 4-byte ack; messages per second
 *   bw       as rate, with SIZE default 1 MiB: bandwidth in MB/s (10^6 bytes/s)
 *   probe    as rate, but rank 1 posts no receive ahead: it takes each message by
 *            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) until one is there, then
 *            MPI_Recv of its source and tag (a master/worker loop; every message
 *            unexpected); messages per second
 *
 * --thread-multiple: MPI_Init_thread(MPI_THREAD_MULTIPLE) (one thread still does
 * everything): what a PML's thread safety costs.
 * --strided: each message is SIZE bytes of doubles every other one in memory (an
 * MPI_Type_vector, stride 2: a halo column's shape), on both sides; SIZE a multiple
 * of 8. What a PML's path for non-contiguous data (pack, unpack) costs.
 * --block B: with --strided, blocks of B bytes (a multiple of 8) every 2B bytes
 * instead of single doubles: rows of a 2-D block's face.
 *
 * Several sizes (a comma list) are measured one after the other in one run.
 * Each measurement is the median of R repetitions (default 5) of N iterations
 * (ping-pongs or windows), after a warm-up. Without --iters, N is calibrated so the
 * R repetitions together take about T seconds (default 1).
 *
 * Output, on rank 0, per measurement: one machine-readable line
 *   mode=rate size=8 value=1234567.0 unit=msg/s
 * then one human-readable line starting with '#'.
 *
 * Receive buffers are distinct per message of a window (concurrent receives into
 * one buffer are erroneous MPI); the window's sends share one buffer.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 64, ACK_TAG = 99, DATA_TAG = 1, MAX_REPS = 1000 };

typedef enum { LATENCY, RATE, BW, PROBE } mode_t_;

static int rank;
static char *sbuf, *rbuf; /* rbuf: WINDOW * size bytes (WINDOW * span with --strided) */
static size_t msg_size;
static int strided;
static size_t block = 8; /* --block */
static MPI_Datatype msg_type = MPI_BYTE; /* MPI_BYTE, or a vector of doubles (--strided) */
static size_t msg_span;                  /* bytes a message covers in memory */

/* One timed block of `iters` iterations; returns elapsed seconds (rank 0's clock). */
static double run_block(mode_t_ mode, long iters) {
    const int peer = 1 - rank;
    const int n = strided ? 1 : (int)msg_size;
    const MPI_Datatype type = msg_type;
    const size_t span = msg_span;
    MPI_Request req[WINDOW];
    int ack = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (mode == LATENCY) {
        for (long i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, n, type, peer, DATA_TAG, MPI_COMM_WORLD);
                MPI_Recv(rbuf, n, type, peer, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, n, type, peer, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, n, type, peer, DATA_TAG, MPI_COMM_WORLD);
            }
        }
    } else if (mode == PROBE && rank == 1) {
        for (long i = 0; i < iters; i++) {
            for (int w = 0; w < WINDOW; w++) {
                MPI_Status st;
                int flag = 0;
                while (!flag)
                    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
                MPI_Recv(rbuf + (size_t)w * span, n, type, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            }
            MPI_Send(&ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD);
        }
    } else if (rank == 0) {
        for (long i = 0; i < iters; i++) {
            /* The ack of the previous window says rank 1 has posted this window's receives. */
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, n, type, peer, DATA_TAG, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        for (int w = 0; w < WINDOW; w++)
            MPI_Irecv(rbuf + (size_t)w * span, n, type, peer, DATA_TAG, MPI_COMM_WORLD, &req[w]);
        for (long i = 0; i < iters; i++) {
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            if (i + 1 < iters) /* pre-post the next window before releasing the sender */
                for (int w = 0; w < WINDOW; w++)
                    MPI_Irecv(rbuf + (size_t)w * span, n, type, peer, DATA_TAG, MPI_COMM_WORLD, &req[w]);
            MPI_Send(&ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

/* Iterations per repetition so that `reps` repetitions take about `target` seconds. */
static long calibrate(mode_t_ mode, int reps, double target) {
    long it = 1;
    double t = run_block(mode, it);
    /* Grow until a block takes long enough to time reliably (both ranks see the same t). */
    while (t < 0.02 && it < (1L << 40)) {
        it *= t < 0.002 ? 8 : 2;
        t = run_block(mode, it);
    }
    double per_iter = t / (double)it;
    long n = (long)(target / reps / per_iter);
    return n < 1 ? 1 : n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(void) {
    if (rank == 0)
        fprintf(stderr,
                "usage: p2p_bench [--iters N] [--reps R] [--time T] [--thread-multiple]\n"
                "                 [--strided [--block B]]\n"
                "                 latency|rate|bw|probe [SIZE[,SIZE...]]\n"
                "  SIZE in bytes (suffix K or M for KiB/MiB); default 8, 1M for bw; a comma list\n"
                "  measures each size in turn\n"
                "  --iters N  iterations per repetition (default: calibrated to --time)\n"
                "  --reps R   repetitions, the median is reported (default 5)\n"
                "  --time T   seconds for the R repetitions together when calibrating (default 1)\n"
                "  --thread-multiple  initialise with MPI_THREAD_MULTIPLE (fails if not provided)\n"
                "  --strided  SIZE bytes of doubles at stride 2 (MPI_Type_vector); SIZE a multiple of 8\n"
                "  --block B  with --strided: blocks of B bytes every 2B (B a multiple of 8, SIZE of B)\n");
}

enum { MAX_SIZES = 64 };

/* A comma list of sizes; returns how many (0: malformed). */
static int parse_sizes(const char *s, size_t *out) {
    int n = 0;
    for (;;) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || n == MAX_SIZES) return 0;
        if (*end == 'K' || *end == 'k') v <<= 10, end++;
        else if (*end == 'M' || *end == 'm') v <<= 20, end++;
        if ((*end != '\0' && *end != ',') || v > (1ULL << 30)) return 0;
        out[n++] = (size_t)v;
        if (*end == '\0') return n;
        s = end + 1;
    }
}

int main(int argc, char **argv) {
    int size, multiple = 0, provided = MPI_THREAD_SINGLE;
    for (int a = 1; a < argc; a++) /* before MPI_Init_thread: it decides the level */
        multiple |= strcmp(argv[a], "--thread-multiple") == 0;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long iters_arg = 0;
    int reps = 5, ok = 1, nsizes = 0;
    size_t sizes[MAX_SIZES];
    double target = 1.0;
    const char *mode_name = NULL;
    for (int a = 1; a < argc && ok; a++) {
        if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc) iters_arg = atol(argv[++a]), ok = iters_arg > 0;
        else if (strcmp(argv[a], "--reps") == 0 && a + 1 < argc)
            reps = atoi(argv[++a]), ok = reps > 0 && reps <= MAX_REPS;
        else if (strcmp(argv[a], "--time") == 0 && a + 1 < argc) target = atof(argv[++a]), ok = target > 0;
        else if (strcmp(argv[a], "--thread-multiple") == 0) ok = provided == MPI_THREAD_MULTIPLE;
        else if (strcmp(argv[a], "--strided") == 0) strided = 1;
        else if (strcmp(argv[a], "--block") == 0 && a + 1 < argc)
            block = strtoul(argv[++a], NULL, 10), ok = block > 0 && block % 8 == 0;
        else if (!mode_name && argv[a][0] != '-') mode_name = argv[a];
        else if (mode_name && nsizes == 0) ok = (nsizes = parse_sizes(argv[a], sizes)) > 0;
        else ok = 0;
    }
    mode_t_ mode = LATENCY;
    if (ok && mode_name && strcmp(mode_name, "latency") == 0) mode = LATENCY;
    else if (ok && mode_name && strcmp(mode_name, "rate") == 0) mode = RATE;
    else if (ok && mode_name && strcmp(mode_name, "bw") == 0) mode = BW;
    else if (ok && mode_name && strcmp(mode_name, "probe") == 0) mode = PROBE;
    else ok = 0;
    if (!ok || size != 2) {
        if (rank == 0 && size != 2) fprintf(stderr, "p2p_bench: needs exactly 2 ranks (got %d)\n", size);
        usage();
        MPI_Finalize();
        return 2;
    }
    if (nsizes == 0) sizes[nsizes++] = mode == BW ? (size_t)1 << 20 : 8;
    size_t max_size = 1;
    for (int i = 0; i < nsizes; i++) {
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
        if (strided && (sizes[i] == 0 || sizes[i] % block != 0)) {
            if (rank == 0)
                fprintf(stderr, "p2p_bench: --strided needs sizes that are multiples of the block, %zu bytes "
                                "(got %zu)\n", block, sizes[i]);
            MPI_Finalize();
            return 2;
        }
    }
    size_t max_span = strided ? 2 * max_size : max_size;
    size_t rlen = (mode == LATENCY ? 1 : WINDOW) * max_span;
    sbuf = malloc(max_span);
    rbuf = malloc(rlen);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "p2p_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a' + rank, max_span);
    memset(rbuf, 0, rlen); /* touch the pages before timing */

    for (int si = 0; si < nsizes; si++) {
        msg_size = sizes[si];
        msg_span = msg_size;
        if (strided) {
            MPI_Type_vector((int)(msg_size / block), (int)(block / 8), (int)(2 * block / 8), MPI_DOUBLE, &msg_type);
            MPI_Type_commit(&msg_type);
            msg_span = 2 * msg_size - block;
        }
        long iters = iters_arg;

        /* Warm-up (connections, registration caches), then calibration, which warms up further. */
        run_block(mode, mode == LATENCY ? 1000 : 20);
        int calibrated = iters == 0;
        if (calibrated) iters = calibrate(mode, reps, target);

        double t[MAX_REPS];
        for (int r = 0; r < reps; r++) t[r] = run_block(mode, iters);
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        double median = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;

        if (rank == 0) {
            double value = 0, best = 0, worst = 0;
            const char *unit = "";
            double msgs = (double)iters * WINDOW;
            switch (mode) {
            case LATENCY:
                value = median / (2.0 * (double)iters) * 1e6, unit = "us";
                best = t[0] / (2.0 * (double)iters) * 1e6, worst = t[reps - 1] / (2.0 * (double)iters) * 1e6;
                break;
            case RATE:
            case PROBE:
                value = msgs / median, unit = "msg/s";
                best = msgs / t[0], worst = msgs / t[reps - 1];
                break;
            case BW:
                value = msgs * (double)msg_size / median / 1e6, unit = "MB/s";
                best = msgs * (double)msg_size / t[0] / 1e6, worst = msgs * (double)msg_size / t[reps - 1] / 1e6;
                break;
            }
            printf("mode=%s size=%zu value=%.*f unit=%s%s", mode_name, msg_size, mode == LATENCY ? 3 : 1, value, unit,
                   strided ? " layout=strided" : "");
            if (strided && block != 8) {
                printf(" block=%zu", block);
            }
            printf("\n");
            printf("# %s, %zu bytes%s: %.4g %s (median of %d reps x %ld %s%s; best %.4g, worst %.4g)\n", mode_name,
                   msg_size, strided ? " at stride 2" : "", value, unit, reps, iters, mode == LATENCY ? "round trips" : "windows of 64",
                   calibrated ? ", calibrated" : "", best, worst);
            fflush(stdout);
        }
        if (strided) MPI_Type_free(&msg_type);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

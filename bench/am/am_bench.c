/* Active-message benchmark (issue 16, seed 004 section V in miniature).
 * The last rank is the target; every other rank is an origin.  The target waits
 * in MPI_Barrier (it serves AMs from Open MPI's progress); every AM measure has
 * its MPI RMA equivalent on the same window in the same run:
 *   rate:     N AMs (absolute value, 16 ints in and out) in one lock epoch, against
 *             N MPI_Get_accumulate (16 ints in, 16 ints fetched back) and N MPI_Accumulate
 *   latency:  one AM + MPI_Win_flush, against MPI_Get_accumulate + flush and an 8 B
 *             MPI_Send/MPI_Recv round trip (np 2 only)
 *   segments: one remote-search AM (20 chars in, 20 out per segment) + flush, 1 to 1000 segments
 *   amv:      remote-search AMs of 16 segments (up to 10 sequences of 20 chars out each) per
 *             second against the generated share: MPIX_Am, MPIX_Amv (1.0), MPIX_Amv (0.8)
 * Usage: mpix_am_bench [--n N] [--reps R] [--only rate|latency|segments|amv]
 * Prints one line per point: the median of R repetitions. */
#include "mpix_am.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INTS = 16, SEQ = 20, MAXSEQ = 10, AMV_SEG = 16 };
static int rank, size, target, origins;
static double share = 1.0; /* amv: the share of the maximum output the handler generates */

static int absval(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, void *pers,
                  int pc, MPI_Datatype pt)
{
    (void)it; (void)oc; (void)ot; (void)pc; (void)pt;
    const int *a = in;
    int *b = out;
    for (int i = 0; i < ic; i++) b[i] = abs(a[i]);
    ((int *)pers)[0] += ic;
    return MPI_SUCCESS;
}

/* Remote search: output the sequence of the dataset equal to the input (one per segment). */
static int search(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, void *pers,
                  int pc, MPI_Datatype pt)
{
    (void)it; (void)ot; (void)pt;
    const char *d = pers;
    memset(out, 0, (size_t)oc);
    for (int i = 0; i + ic <= pc; i += SEQ)
        if (!memcmp(d + i, in, (size_t)ic)) { memcpy(out, d + i, (size_t)ic); break; }
    return MPI_SUCCESS;
}

/* Vector remote search: each segment generates `share` of its maximum output. */
static int search_v(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, int *counts,
                    int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)in; (void)ic; (void)it; (void)ot; (void)pt;
    int nseq = (int)(share * MAXSEQ + 0.5);
    for (int s = 0; s < nseg; s++) {
        char *o = (char *)out + (size_t)s * (size_t)oc;
        for (int q = 0; q < nseq; q++) memcpy(o + q * SEQ, (char *)pers + (q * SEQ) % (pc - SEQ), SEQ);
        counts[s] = nseq * SEQ;
    }
    return MPI_SUCCESS;
}

/* The same search handler for MPIX_Am: always a full output segment (the data
 * generated is the same; the rest is what MPIX_Am sends anyway). */
static int search_full(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, void *pers,
                       int pc, MPI_Datatype pt)
{
    int c;
    return search_v(in, ic, it, out, oc, ot, &c, 1, pers, pc, pt);
}

/* 8 B MPI_Send/MPI_Recv round trip between rank 0 and the target, best of reps
 * (the floor an AM's round trip is compared with); measured before any window
 * exists, so the AM library's progress callback is not in it. 0 unless np is 2. */
static double round_trip(int k, int reps)
{
    double best = 0;
    if (size != 2) return 0;
    for (int r = 0; r < reps; r++) {
        char x[8] = { 0 };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < k; i++)
            if (rank == 0) {
                MPI_Send(x, 8, MPI_CHAR, 1, 9, MPI_COMM_WORLD);
                MPI_Recv(x, 8, MPI_CHAR, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(x, 8, MPI_CHAR, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(x, 8, MPI_CHAR, 0, 9, MPI_COMM_WORLD);
            }
        double dt = (MPI_Wtime() - t0) / k;
        if (r == 0 || dt < best) best = dt;
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return best;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs body() on every origin between barriers `reps` times; returns the median
 * over repetitions of the slowest origin's seconds. */
static double timed(int reps, void (*body)(void *), void *arg)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), dt = 0;
        if (rank != target) {
            body(arg);
            dt = MPI_Wtime() - t0;
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the target serves here */
        MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double m = t[reps / 2];
    free(t);
    return m;
}

typedef struct { MPI_Win win; MPIX_Am_op op; int n, nseg, kind; } job;
static int in_ints[INTS], out_ints[INTS], *big_out, *counts;
static char seq_in[1000 * SEQ], seq_out[1000 * MAXSEQ * SEQ];

static void am_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++)
        MPIX_Am(in_ints, INTS, MPI_INT, big_out + (size_t)i % 4096 * INTS, INTS, MPI_INT, 1, target, 0, 1, MPI_INT,
                j->op, j->win);
    MPI_Win_unlock(target, j->win);
}

static void getacc_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++)
        if (j->kind)
            MPI_Get_accumulate(in_ints, INTS, MPI_INT, big_out + (size_t)i % 4096 * INTS, INTS, MPI_INT, target,
                               4, INTS, MPI_INT, MPI_SUM, j->win);
        else
            MPI_Accumulate(in_ints, INTS, MPI_INT, target, 4, INTS, MPI_INT, MPI_SUM, j->win);
    MPI_Win_unlock(target, j->win);
}

static void am_latency(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++) {
        if (j->kind)
            MPI_Get_accumulate(in_ints, INTS, MPI_INT, out_ints, INTS, MPI_INT, target, 4, INTS, MPI_INT, MPI_SUM,
                               j->win);
        else
            MPIX_Am(in_ints, INTS, MPI_INT, out_ints, INTS, MPI_INT, 1, target, 0, 1, MPI_INT, j->op, j->win);
        MPI_Win_flush(target, j->win);
    }
    MPI_Win_unlock(target, j->win);
}

static void am_segments(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++) {
        MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, SEQ, MPI_CHAR, j->nseg, target, 64, 64 * SEQ, MPI_CHAR, j->op,
                j->win);
        MPI_Win_flush(target, j->win);
    }
    MPI_Win_unlock(target, j->win);
}

static void amv_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++)
        if (j->kind)
            MPIX_Amv(seq_in, SEQ, MPI_CHAR, seq_out, MAXSEQ * SEQ, MPI_CHAR, counts, AMV_SEG, target, 64, 64 * SEQ,
                     MPI_CHAR, j->op, j->win);
        else
            MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, MAXSEQ * SEQ, MPI_CHAR, AMV_SEG, target, 64, 64 * SEQ,
                    MPI_CHAR, j->op, j->win);
    MPI_Win_unlock(target, j->win);
}

static MPI_Win window(const char *threshold, char **mem)
{
    MPI_Info info;
    MPI_Win w;
    MPI_Info_create(&info);
    MPI_Info_set(info, "am_pack_threshold", threshold);
    MPI_Win_allocate(64 + 64 * SEQ, 1, info, MPI_COMM_WORLD, mem, &w);
    MPI_Info_free(&info);
    for (int i = 0; i < 64 * SEQ; i++) (*mem)[64 + i] = (char)('a' + i % 26);
    return w;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 100000, reps = 5;
    const char *only = "";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    if (size < 2 || n < 1 || reps < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np P>=2 mpix_am_bench [--n N>=1] [--reps R>=1] "
                                       "[--only rate|latency|segments|amv]\n");
        MPI_Finalize();
        return 1;
    }
    target = size - 1;
    origins = size - 1;
    big_out = calloc(4096 * INTS, sizeof(int));
    counts = calloc(1000, sizeof(int));
    for (int i = 0; i < INTS; i++) in_ints[i] = i % 2 ? -i : i;
    for (int i = 0; i < 1000 * SEQ; i++) seq_in[i] = (char)('a' + (i % SEQ));
    MPIX_Am_op op_abs, op_search, op_search_full, op_search_v;
    MPIX_Am_op_create(absval, &op_abs);
    MPIX_Am_op_create(search, &op_search);
    MPIX_Am_op_create(search_full, &op_search_full);
    MPIX_Amv_op_create(search_v, &op_search_v);
    int klat = n < 20000 ? n : 20000;
    double t_pp = (!*only || !strcmp(only, "latency")) ? round_trip(klat, reps) : 0;
    char *mem, *mem1, *mem08;
    MPI_Win win = window("0.8", &mem), win1 = window("1.0", &mem1), win08 = window("0.8", &mem08);
    if (rank == 0) printf("# np %d (%d origin(s) -> rank %d), n %d, median of %d\n", size, origins, target, n, reps);

    if (!*only || !strcmp(only, "rate")) {
        job am = { win, op_abs, n, 1, 0 }, ga = { win, 0, n, 1, 1 }, acc = { win, 0, n, 1, 0 };
        double t_am = timed(reps, am_rate, &am), t_ga = timed(reps, getacc_rate, &ga),
               t_acc = timed(reps, getacc_rate, &acc);
        double tot = (double)n * origins;
        if (rank == 0)
            printf("rate      MPIX_Am %.3g/s  MPI_Get_accumulate %.3g/s  MPI_Accumulate %.3g/s  "
                   "Am/Get_accumulate %.2f  Am/Accumulate %.2f\n",
                   tot / t_am, tot / t_ga, tot / t_acc, t_ga / t_am, t_acc / t_am);
    }
    if (!*only || !strcmp(only, "latency")) {
        int k = klat;
        job am = { win, op_abs, k, 1, 0 }, ga = { win, 0, k, 1, 1 };
        double t_am = timed(reps, am_latency, &am) / k, t_ga = timed(reps, am_latency, &ga) / k;
        double t_pp_win = round_trip(k, reps); /* now with AM windows: the progress callback runs */
        if (rank == 0)
            printf("latency   MPIX_Am+flush %.2f us  MPI_Get_accumulate+flush %.2f us  8B round trip %.2f us "
                   "(%.2f us with AM windows)  Am/Get_accumulate %.2f  Am/round trip %.2f\n",
                   t_am * 1e6, t_ga * 1e6, t_pp * 1e6, t_pp_win * 1e6, t_am / t_ga, t_pp > 0 ? t_am / t_pp : 0.0);
    }
    if (!*only || !strcmp(only, "segments")) {
        static const int segs[] = { 1, 10, 100, 1000 };
        for (int i = 0; i < 4; i++) {
            int k = n / segs[i] / 10 > 1000 ? 1000 : n / segs[i] / 10 + 1;
            job j = { win, op_search, k, segs[i], 0 };
            double t = timed(reps, am_segments, &j) / k;
            if (rank == 0) printf("segments  %4d  MPIX_Am+flush %.2f us\n", segs[i], t * 1e6);
        }
    }
    if (!*only || !strcmp(only, "amv")) {
        int k = n / AMV_SEG > 0 ? n / AMV_SEG : 1;
        for (int p = 1; p <= 10; p++) {
            share = p / 10.0;
            job am = { win, op_search_full, k, AMV_SEG, 0 }, v1 = { win1, op_search_v, k, AMV_SEG, 1 },
                v08 = { win08, op_search_v, k, AMV_SEG, 1 };
            double t_am = timed(reps, amv_rate, &am), t1 = timed(reps, amv_rate, &v1),
                   t08 = timed(reps, amv_rate, &v08);
            double tot = (double)k * origins;
            if (rank == 0)
                printf("amv       share %.1f  MPIX_Am %.3g/s  MPIX_Amv(1.0) %.3g/s  MPIX_Amv(0.8) %.3g/s  "
                       "Amv(1.0)/Am %.2f  Amv(0.8)/Am %.2f\n",
                       share, tot / t_am, tot / t1, tot / t08, t_am / t1, t_am / t08);
        }
    }
    MPI_Win_free(&win);
    MPI_Win_free(&win1);
    MPI_Win_free(&win08);
    free(big_out);
    free(counts);
    MPI_Finalize();
    return 0;
}

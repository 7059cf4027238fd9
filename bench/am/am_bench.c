/* Active-message benchmark (issue 16, seed 004 section V in miniature).
 * The last rank is the target; every other rank is an origin.  The target waits
 * in MPI_Barrier (it serves AMs from Open MPI's progress) and attaches a 4 MiB
 * user buffer to every window.  Three implementations as in the paper: base
 * (shared lock, reservations by handshake), excl (exclusive lock: one reservation
 * at lock time), hint (window info am_user_buf_<target> = 4 MiB / origins and
 * am_buf_interleave_am_detach = false: no handshake).  Measures:
 *   rate:     N AMs (absolute value, 16 ints in and out) in one epoch, base/excl/hint, against
 *             N MPI_Get_accumulate (16 ints in, 16 ints fetched back) and N MPI_Accumulate on
 *             the hint window (Fig. 6, and the RMA baseline)
 *   latency:  one AM + MPI_Win_flush (hint window), against MPI_Get_accumulate + flush and an
 *             8 B MPI_Send/MPI_Recv round trip (np 2 only)
 *   segments: lock, one remote-search AM (20 chars in, 20 out per segment), unlock: 1 to 1000
 *             segments, base/excl/hint, with the time in reservation messages (Fig. 5(a)(b))
 *   flush2:   exclusive lock, AM, flush, AM, unlock (1000 segments each), without and with
 *             am_buf_interleave_am_detach = false (Fig. 5(e)(f))
 *   amv:      remote-search AMs of 16 segments (up to 10 sequences of 20 chars out each) per
 *             second against the generated share: MPIX_Am, MPIX_Amv (1.0), MPIX_Amv (0.8) (Fig. 9)
 * Usage: mpix_am_bench [--n N] [--reps R] [--only rate|latency|segments|flush2|amv] [--thread-level
 *        single|multiple] (multiple: MPI initialized with MPI_THREAD_MULTIPLE, one thread still
 *        issuing: what the library's locks cost)
 * Prints one line per point: the median of R repetitions of the slowest origin (latency:
 * the best of R, for the AM and its baselines alike). */
#include "mpix_am.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INTS = 16, SEQ = 20, MAXSEQ = 10, AMV_SEG = 16, USER_BUF = 4 << 20 };
/* The window: the AM counter at byte 0, the RMA baseline's INTS ints from byte 4,
 * the remote search's 64 sequences from byte DATA, apart from both (an
 * accumulate into the first sequence made every search scan all 64). */
enum { DATA = 128 };
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

/* Runs each variant's body() on every origin between barriers, the variants
 * interleaved within each of `reps` rounds (so that load from other jobs falls on
 * all alike); med[v] and best[v]: the median and the best over rounds of the
 * slowest origin's seconds. */
typedef struct { void (*body)(void *); void *arg; } variant;

static void timed(int reps, int nv, const variant *v, double *med, double *best)
{
    double *t = malloc(sizeof(double) * (size_t)(reps * nv));
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < nv; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), dt = 0;
            if (rank != target) {
                v[i].body(v[i].arg);
                dt = MPI_Wtime() - t0;
            }
            MPI_Barrier(MPI_COMM_WORLD); /* the target serves here */
            MPI_Allreduce(&dt, &t[i * reps + r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
    for (int i = 0; i < nv; i++) {
        qsort(t + i * reps, (size_t)reps, sizeof *t, cmp);
        med[i] = t[i * reps + reps / 2];
        if (best) best[i] = t[i * reps];
    }
    free(t);
}

typedef struct { MPI_Win win; MPIX_Am_op op; int n, nseg, kind, lock; } job;
static int in_ints[INTS], out_ints[INTS], *big_out, *counts;
static char seq_in[1000 * SEQ], seq_out[1000 * MAXSEQ * SEQ];

static void am_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(j->lock, target, 0, j->win);
    for (int i = 0; i < j->n; i++)
        MPIX_Am(in_ints, INTS, MPI_INT, big_out + (size_t)i % 4096 * INTS, INTS, MPI_INT, 1, target, 0, 1, MPI_INT,
                j->op, j->win);
    MPI_Win_unlock(target, j->win);
}

static void getacc_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(j->lock, target, 0, j->win);
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
    for (int i = 0; i < j->n; i++) {
        MPI_Win_lock(j->lock, target, 0, j->win);
        MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, SEQ, MPI_CHAR, j->nseg, target, DATA, 64 * SEQ, MPI_CHAR, j->op,
                j->win);
        MPI_Win_unlock(target, j->win);
    }
}

static void am_flush2(void *a)
{
    job *j = a;
    for (int i = 0; i < j->n; i++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, j->win);
        MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, SEQ, MPI_CHAR, j->nseg, target, DATA, 64 * SEQ, MPI_CHAR, j->op,
                j->win);
        MPI_Win_flush(target, j->win);
        MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, SEQ, MPI_CHAR, j->nseg, target, DATA, 64 * SEQ, MPI_CHAR, j->op,
                j->win);
        MPI_Win_unlock(target, j->win);
    }
}

/* Seconds per iteration in reservation messages, summed over origins' medians'
 * worth: the mean over all repetitions of the slowest origin's share. */
static double sync_per(MPI_Win w, double before, int iters, int reps)
{
    double s = 0, worst;
    long n;
    MPIX_Am_win_get_sync(w, &s, &n);
    s -= before;
    MPI_Allreduce(&s, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst / iters / reps;
}

static long trips_now(MPI_Win w)
{
    double s;
    long n;
    MPIX_Am_win_get_sync(w, &s, &n);
    return n;
}

static double sync_now(MPI_Win w)
{
    double s;
    long n;
    MPIX_Am_win_get_sync(w, &s, &n);
    return s;
}

static void amv_rate(void *a)
{
    job *j = a;
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, j->win);
    for (int i = 0; i < j->n; i++)
        if (j->kind)
            MPIX_Amv(seq_in, SEQ, MPI_CHAR, seq_out, MAXSEQ * SEQ, MPI_CHAR, counts, AMV_SEG, target, DATA, 64 * SEQ,
                     MPI_CHAR, j->op, j->win);
        else
            MPIX_Am(seq_in, SEQ, MPI_CHAR, seq_out, MAXSEQ * SEQ, MPI_CHAR, AMV_SEG, target, DATA, 64 * SEQ,
                    MPI_CHAR, j->op, j->win);
    MPI_Win_unlock(target, j->win);
}

/* A window whose target attaches a user buffer; hint: every origin is told its
 * share of it (am_user_buf_<target>) and that no detach interleaves; interleave
 * alone: only am_buf_interleave_am_detach = false. */
static char *user_bufs[8]; /* the target's, one per window */
static int nuser;

static MPI_Win window(const char *threshold, int hint, int no_interleave)
{
    MPI_Info info;
    MPI_Win w;
    char key[32], val[32], *mem;
    MPI_Info_create(&info);
    MPI_Info_set(info, "am_pack_threshold", threshold);
    if (hint) {
        snprintf(key, sizeof key, "am_user_buf_%d", target);
        snprintf(val, sizeof val, "%d", USER_BUF / origins);
        MPI_Info_set(info, key, val);
    }
    if (hint || no_interleave) MPI_Info_set(info, "am_buf_interleave_am_detach", "false");
    MPI_Win_allocate(DATA + 64 * SEQ, 1, info, MPI_COMM_WORLD, &mem, &w);
    MPI_Info_free(&info);
    for (int i = 0; i < 64 * SEQ; i++) mem[DATA + i] = (char)('a' + i % 26);
    if (rank == target) {
        user_bufs[nuser] = malloc(USER_BUF);
        MPIX_Am_win_buffer_attach(user_bufs[nuser++], USER_BUF, w);
    }
    return w;
}

int main(int argc, char **argv)
{
    int level = -1, provided;
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--thread-level"))
            level = !strcmp(argv[i + 1], "multiple") ? MPI_THREAD_MULTIPLE
                    : !strcmp(argv[i + 1], "single") ? MPI_THREAD_SINGLE : -2;
    if (level == -2) {
        fprintf(stderr, "mpix_am_bench: --thread-level takes single or multiple\n");
        return 1;
    }
    if (level < 0) MPI_Init(&argc, &argv);
    else MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 100000, reps = 5;
    const char *only = "";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    if (level == MPI_THREAD_MULTIPLE && rank == 0)
        printf("# MPI_THREAD_MULTIPLE (provided: %s)\n", provided == MPI_THREAD_MULTIPLE ? "yes" : "no");
    static const char *measures = " rate latency segments flush2 amv ";
    char probe[32];
    snprintf(probe, sizeof probe, " %s ", only);
    if (size < 2 || n < 1 || reps < 1 || (*only && !strstr(measures, probe))) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np P>=2 mpix_am_bench [--n N>=1] [--reps R>=1] "
                                       "[--only rate|latency|segments|flush2|amv] [--thread-level single|multiple]\n");
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
    if (rank == 0) printf("# np %d (%d origin(s) -> rank %d), n %d, median of %d\n", size, origins, target, n, reps);
    int klat = n < 20000 ? n : 20000;
    double t_pp = (!*only || !strcmp(only, "latency")) ? round_trip(klat, reps) : 0;
    /* latency first, with its window alone: the target probes every AM window it has */
    MPI_Win win = window("0.8", 1, 0);
    const int SH = MPI_LOCK_SHARED, EX = MPI_LOCK_EXCLUSIVE;
    if (!*only || !strcmp(only, "latency")) {
        int k = klat;
        job am = { win, op_abs, k, 1, 0, SH }, ga = { win, 0, k, 1, 1, SH };
        /* best of the repetitions, as for the round trip: the floor under this machine's noise */
        variant v[2] = { { am_latency, &am }, { am_latency, &ga } };
        double m[2], b[2];
        timed(reps, 2, v, m, b);
        double t_am = b[0] / k, t_ga = b[1] / k;
        double t_pp_win = round_trip(k, reps); /* now with AM windows: the progress callback runs */
        if (rank == 0)
            printf("latency   MPIX_Am+flush %.2f us  MPI_Get_accumulate+flush %.2f us  8B round trip %.2f us "
                   "(%.2f us with AM windows)  Am/Get_accumulate %.2f  Am/round trip %.2f\n",
                   t_am * 1e6, t_ga * 1e6, t_pp * 1e6, t_pp_win * 1e6, t_am / t_ga, t_pp > 0 ? t_am / t_pp : 0.0);
    }
    MPI_Win wbase = window("0.8", 0, 0), wexcl = window("0.8", 0, 0), wint = window("0.8", 0, 1),
            win1 = window("1.0", 1, 0), win08 = window("0.8", 1, 0);

    if (!*only || !strcmp(only, "rate")) {
        job base = { wbase, op_abs, n, 1, 0, SH }, excl = { wexcl, op_abs, n, 1, 0, EX },
            hint = { win, op_abs, n, 1, 0, SH }, ga = { win, 0, n, 1, 1, SH }, acc = { win, 0, n, 1, 0, SH };
        variant v[5] = { { am_rate, &base }, { am_rate, &excl }, { am_rate, &hint }, { getacc_rate, &ga },
                         { getacc_rate, &acc } };
        double m[5];
        timed(reps, 5, v, m, NULL);
        double t_b = m[0], t_e = m[1], t_h = m[2], t_ga = m[3], t_acc = m[4];
        double tot = (double)n * origins;
        if (rank == 0)
            printf("rate      base %.3g/s  excl %.3g/s  hint %.3g/s  MPI_Get_accumulate %.3g/s  MPI_Accumulate %.3g/s  "
                   "excl/base %.2f  hint/base %.2f  hint/Get_accumulate %.2f  hint/Accumulate %.2f\n",
                   tot / t_b, tot / t_e, tot / t_h, tot / t_ga, tot / t_acc, t_b / t_e, t_b / t_h, t_ga / t_h,
                   t_acc / t_h);
    }
    if (!*only || !strcmp(only, "segments")) {
        /* 200-500: just past the 8 KiB system buffer (~200 segments of 40 B), where one
         * reservation round trip is the largest share of an AM */
        static const int segs[] = { 1, 10, 100, 200, 300, 500, 1000 };
        for (int i = 0; i < (int)(sizeof segs / sizeof segs[0]); i++) {
            int k = n / segs[i] / 10 > 1000 ? 1000 : n / segs[i] / 10 + 1;
            job m[3] = { { wbase, op_search, k, segs[i], 0, SH }, { wexcl, op_search, k, segs[i], 0, EX },
                         { win, op_search, k, segs[i], 0, SH } };
            variant v[3] = { { am_segments, &m[0] }, { am_segments, &m[1] }, { am_segments, &m[2] } };
            double t[3], sy[3], s0[3], tr[3];
            long n0[3];
            for (int i = 0; i < 3; i++) {
                s0[i] = sync_now(m[i].win);
                n0[i] = trips_now(m[i].win);
            }
            timed(reps, 3, v, t, NULL);
            for (int i = 0; i < 3; i++) {
                t[i] /= k;
                sy[i] = sync_per(m[i].win, s0[i], k, reps);
                tr[i] = (double)(trips_now(m[i].win) - n0[i]) / k / reps;
            }
            if (rank == 0)
                printf("segments  %4d  base %.2f us (%.1f trips, %.2f us)  excl %.2f us (%.1f, %.2f)  "
                       "hint %.2f us (%.1f, %.2f)  excl/base %.2f  hint/excl %.2f\n", segs[i], t[0] * 1e6, tr[0],
                       sy[0] * 1e6, t[1] * 1e6, tr[1], sy[1] * 1e6, t[2] * 1e6, tr[2], sy[2] * 1e6, t[1] / t[0],
                       t[2] / t[1]);
        }
    }
    if (!*only || !strcmp(only, "flush2")) {
        int k = n / 1000 > 1000 ? 1000 : n / 1000 + 1;
        job no = { wexcl, op_search, k, 1000, 0, EX }, yes = { wint, op_search, k, 1000, 0, EX };
        variant v[2] = { { am_flush2, &no }, { am_flush2, &yes } };
        double t[2], s0 = sync_now(wexcl), s1 = sync_now(wint);
        timed(reps, 2, v, t, NULL);
        double t_no = t[0] / k, t_yes = t[1] / k, sy_no = sync_per(wexcl, s0, k, reps),
               sy_yes = sync_per(wint, s1, k, reps);
        if (rank == 0)
            printf("flush2    no hint %.2f us (sync %.2f)  am_buf_interleave_am_detach=false %.2f us (sync %.2f)  "
                   "hint/no hint %.2f  sync %.2f\n", t_no * 1e6, sy_no * 1e6, t_yes * 1e6, sy_yes * 1e6, t_yes / t_no,
                   sy_no > 0 ? sy_yes / sy_no : 0.0);
    }
    if (!*only || !strcmp(only, "amv")) {
        int k = n / AMV_SEG > 0 ? n / AMV_SEG : 1;
        for (int p = 1; p <= 10; p++) {
            share = p / 10.0;
            job am = { win, op_search_full, k, AMV_SEG, 0, SH }, v1 = { win1, op_search_v, k, AMV_SEG, 1, SH },
                v08 = { win08, op_search_v, k, AMV_SEG, 1, SH };
            variant v[3] = { { amv_rate, &am }, { amv_rate, &v1 }, { amv_rate, &v08 } };
            double t[3];
            timed(reps, 3, v, t, NULL);
            double t_am = t[0], t1 = t[1], t08 = t[2];
            double tot = (double)k * origins;
            if (rank == 0)
                printf("amv       share %.1f  MPIX_Am %.3g/s  MPIX_Amv(1.0) %.3g/s  MPIX_Amv(0.8) %.3g/s  "
                       "Amv(1.0)/Am %.2f  Amv(0.8)/Am %.2f\n",
                       share, tot / t_am, tot / t1, tot / t08, t_am / t1, t_am / t08);
        }
    }
    MPI_Win_free(&wbase);
    MPI_Win_free(&wexcl);
    MPI_Win_free(&win);
    MPI_Win_free(&wint);
    MPI_Win_free(&win1);
    MPI_Win_free(&win08);
    for (int i = 0; i < nuser; i++) free(user_bufs[i]);
    free(big_out);
    free(counts);
    MPI_Finalize();
    return 0;
}

/* Active messages at random: each round is one epoch (fence, lock_all, a shared
 * or exclusive lock, PSCW) of random MPIX_Am / MPIX_Amv calls to random targets
 * on one of three windows (plain, the paper's hints, a packing threshold of
 * 0.5), of 1 to 2500 segments (past the system buffer, the user buffers and one
 * batch), with flushes and MPI_Accumulate between them, some with a derived input
 * type; between rounds ranks swap their user buffers. Every output is checked
 * against what its handler must give (a reference computed at the origin),
 * and at the end each target's counters against the sum of what all origins
 * sent it: no AM lost, none run twice.
 *
 * Usage: mpix_am_random_test [ROUNDS] [SEED] [all|served]: served draws only the
 * epochs in whose calls MPI itself waits for no other rank (fence, lock_all, a
 * shared lock), for runs without Open MPI's progress hook, where a rank waiting
 * in MPI's own MPI_Win_start or exclusive lock serves nothing. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix_am.h"
#include "test_check.h"

enum { SLOTS = 256, ACC = 8, NWIN = 3, MAX_AMS = 40, MAX_RANKS = 64 };

static int rank, size;

static uint64_t rng;
static unsigned draw(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

/* Elements of an input segment: a derived input type arrives as bytes. */
static int ints_in(int count, MPI_Datatype type)
{
    return type == MPI_BYTE ? count / (int)sizeof(int) : count;
}

/* MPIX_Am: counts each input value in the target's slots; out = 3 * in + 1. */
static int count_map(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, void *pers, int pc,
                     MPI_Datatype pt)
{
    (void)ot; (void)pt;
    const int *a = in;
    int *o = out, *slot = pers;
    for (int i = 0, n = ints_in(ic, it); i < n; i++) {
        slot[a[i] & (pc - 1)]++;
        if (i < oc) o[i] = 3 * a[i] + 1;
    }
    return MPI_SUCCESS;
}

/* MPIX_Amv: counts likewise; out = twice the odd inputs, a data-dependent share. */
static int count_odd(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, int *counts,
                     int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)it; (void)ot; (void)pt;
    int *slot = pers;
    for (int s = 0; s < nseg; s++) {
        const int *a = (const int *)in + (size_t)s * (size_t)ic;
        int *o = (int *)out + (size_t)s * (size_t)oc, k = 0;
        for (int i = 0; i < ic; i++) {
            slot[a[i] & (pc - 1)]++;
            if ((a[i] & 1) && k < oc) o[k++] = 2 * a[i];
        }
        counts[s] = k;
    }
    return MPI_SUCCESS;
}

typedef struct {
    int vector, nseg, per; /* per: ints an input segment holds */
    int *in, *out, *counts;
} am_call;

static am_call calls[MAX_AMS];
static int ncalls;
static long long sent[NWIN][MAX_RANKS][SLOTS], accumulated[NWIN][MAX_RANKS];

/* Checks every output of the AMs of the epoch just completed. */
static void check_outputs(int round)
{
    for (int c = 0; c < ncalls; c++) {
        const am_call *a = &calls[c];
        for (int s = 0; s < a->nseg; s++) {
            const int *in = a->in + (size_t)s * (size_t)a->per, *o = a->out + (size_t)s * (size_t)a->per;
            int k = 0;
            for (int i = 0; i < a->per; i++) {
                if (!a->vector) {
                    CHECK(o[i] == 3 * in[i] + 1, "round %d, MPIX_Am %d, segment %d of %d, element %d: %d, expected %d",
                          round, c, s, a->nseg, i, o[i], 3 * in[i] + 1);
                } else if (in[i] & 1) {
                    CHECK(o[k] == 2 * in[i], "round %d, MPIX_Amv %d, segment %d of %d, output %d: %d, expected %d",
                          round, c, s, a->nseg, k, o[k], 2 * in[i]);
                    k++;
                }
            }
            CHECK(!a->vector || a->counts[s] == k, "round %d, MPIX_Amv %d, segment %d of %d: count %d, expected %d",
                  round, c, s, a->nseg, a->counts[s], k);
        }
        free(a->in);
        free(a->out);
        free(a->counts);
    }
    ncalls = 0;
}

/* One random AM (and now and then an accumulate) to t on window k. */
static void issue(MPI_Win w, int k, int t, MPIX_Am_op map, MPIX_Am_op odd)
{
    static const int segs[] = { 1, 2, 7, 50, 203, 204, 205, 300, 409, 1000, 2500 };
    if (ncalls == MAX_AMS) return;
    am_call *a = &calls[ncalls++];
    a->vector = (int)draw(2);
    a->nseg = segs[draw(sizeof segs / sizeof segs[0])];
    a->per = 1 + (int)draw(draw(4) ? 8 : 64);
    size_t n = (size_t)a->nseg * (size_t)a->per;
    a->in = malloc(n * sizeof(int));
    a->out = malloc(n * sizeof(int));
    a->counts = malloc((size_t)a->nseg * sizeof(int));
    CHECK(a->in && a->out && a->counts, "out of memory");
    int odd_share = (int)draw(5); /* in quarters: the generated share of MPIX_Amv */
    for (size_t i = 0; i < n; i++) {
        a->in[i] = 2 * (int)draw(100000) + ((int)draw(4) < odd_share);
        sent[k][t][a->in[i] & (SLOTS - 1)]++;
    }
    memset(a->out, 0x77, n * sizeof(int));
    int rc;
    if (a->vector) {
        rc = MPIX_Amv(a->in, a->per, MPI_INT, a->out, a->per, MPI_INT, a->counts, a->nseg, t, 0, SLOTS, MPI_INT, odd,
                      w);
    } else if (n * 2 * sizeof(int) <= 8192 && draw(4) == 0) { /* a derived input type: the AM goes as one
                                                                 * unit, here one the system buffer holds */
        MPI_Datatype derived;
        MPI_Type_contiguous(a->per, MPI_INT, &derived);
        MPI_Type_commit(&derived);
        rc = MPIX_Am(a->in, 1, derived, a->out, a->per, MPI_INT, a->nseg, t, 0, SLOTS, MPI_INT, map, w);
        MPI_Type_free(&derived);
    } else {
        rc = MPIX_Am(a->in, a->per, MPI_INT, a->out, a->per, MPI_INT, a->nseg, t, 0, SLOTS, MPI_INT, map, w);
    }
    CHECK(rc == MPI_SUCCESS, "%s returned %d", a->vector ? "MPIX_Amv" : "MPIX_Am", rc);
    if (draw(4) == 0) {
        int one = 1;
        MPI_Accumulate(&one, 1, MPI_INT, t, (MPI_Aint)((SLOTS + draw(ACC)) * sizeof(int)), 1, MPI_INT, MPI_SUM, w);
        accumulated[k][t]++;
    }
}

/* This rank's user buffer of window k: swapped for one of another size between epochs. */
static void *user_buffer[NWIN];
static void swap_buffer(MPI_Win w, int k, int bytes)
{
    CHECK(!user_buffer[k] || MPIX_Am_win_buffer_detach(user_buffer[k], w) == MPI_SUCCESS, "detach failed");
    free(user_buffer[k]);
    user_buffer[k] = bytes ? malloc((size_t)bytes) : NULL;
    CHECK(!bytes || (user_buffer[k] && MPIX_Am_win_buffer_attach(user_buffer[k], bytes, w) == MPI_SUCCESS),
          "attach of %d bytes failed", bytes);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    const char *epochs = argc > 3 ? argv[3] : "all";
    CHECK(size <= MAX_RANKS, "at most %d ranks", MAX_RANKS);
    CHECK(rounds >= 1 && (!strcmp(epochs, "all") || !strcmp(epochs, "served")),
          "usage: mpix_am_random_test [ROUNDS >= 1] [SEED] [all|served]");
    const int served = !strcmp(epochs, "served");
    MPIX_Am_op map, odd;
    MPIX_Am_op_create(count_map, &map);
    MPIX_Amv_op_create(count_odd, &odd);
    static const int user_sizes[] = { 0, 4096, 65536, 1 << 20 };
    MPI_Win win[NWIN];
    int *mem[NWIN];
    for (int k = 0; k < NWIN; k++) {
        MPI_Info info;
        MPI_Info_create(&info);
        if (k == 1) { /* the paper's window hints: 16 KiB of user buffer per origin, no detach between flushes */
            MPI_Info_set(info, "am_buf_interleave_am_detach", "false");
            for (int r = 0; r < size; r++) {
                char key[32];
                snprintf(key, sizeof key, "am_user_buf_%d", r);
                MPI_Info_set(info, key, "16384");
            }
        }
        if (k == 2) MPI_Info_set(info, "am_pack_threshold", "0.5");
        CHECK((mem[k] = calloc(SLOTS + ACC, sizeof(int))) != NULL, "out of memory");
        MPI_Win_create(mem[k], (SLOTS + ACC) * sizeof(int), 1, info, MPI_COMM_WORLD, &win[k]);
        MPI_Info_free(&info);
        /* the hinted window must hold what it promises every origin */
        swap_buffer(win[k], k, k == 1 ? 16384 * size : user_sizes[(rank + k + (int)seed) % 4]);
    }
    MPI_Group all;
    MPI_Comm_group(MPI_COMM_WORLD, &all);
    for (int round = 0; round < rounds; round++) {
        rng = (uint64_t)seed * 1000003u + (uint64_t)round; /* the same window and epoch on every rank */
        int k = (int)draw(NWIN), epoch = (int)draw(served ? 3 : 5); /* served: 0-2 */
        rng = rng * 31 + (uint64_t)rank + 7; /* the rest this rank's own */
        MPI_Win w = win[k];
        int n = 1 + (int)draw(12);
        if (epoch == 0 || epoch == 4) { /* fence, or PSCW with every rank */
            if (epoch == 0) MPI_Win_fence(0, w);
            else {
                MPI_Win_post(all, 0, w);
                MPI_Win_start(all, 0, w);
            }
            for (int i = 0; i < n; i++) issue(w, k, (int)draw((unsigned)size), map, odd);
            if (epoch == 0) MPI_Win_fence(0, w);
            else {
                MPI_Win_complete(w);
                MPI_Win_wait(w);
            }
        } else if (epoch == 1) { /* lock_all, flushes of one target or all */
            MPI_Win_lock_all(0, w);
            for (int i = 0; i < n; i++) {
                int t = (int)draw((unsigned)size);
                issue(w, k, t, map, odd);
                if (draw(3) == 0) draw(2) ? MPI_Win_flush_all(w) : MPI_Win_flush(t, w);
            }
            MPI_Win_unlock_all(w);
        } else { /* one target, a shared or an exclusive lock */
            int t = (int)draw((unsigned)size);
            MPI_Win_lock(epoch == 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, t, 0, w);
            for (int i = 0; i < n; i++) {
                issue(w, k, t, map, odd);
                if (draw(3) == 0) MPI_Win_flush(t, w);
            }
            MPI_Win_unlock(t, w);
        }
        check_outputs(round);
        if (k != 1 && draw(8) == 0) swap_buffer(w, k, user_sizes[draw(4)]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NWIN; k++) {
        static long long total[MAX_RANKS][SLOTS], acc_total[MAX_RANKS];
        MPI_Allreduce(sent[k], total, MAX_RANKS * SLOTS, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(accumulated[k], acc_total, MAX_RANKS, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win[k]); /* the window's memory as MPI left it */
        MPI_Win_unlock(rank, win[k]);
        long long acc = 0;
        for (int s = 0; s < SLOTS; s++)
            CHECK(mem[k][s] == total[rank][s], "window %d, slot %d: %d AMs' elements counted, %lld sent", k, s,
                  mem[k][s], total[rank][s]);
        for (int s = 0; s < ACC; s++) acc += mem[k][SLOTS + s];
        CHECK(acc == acc_total[rank], "window %d: %lld accumulated, %lld sent", k, acc, acc_total[rank]);
    }
    for (int k = 0; k < NWIN; k++) {
        swap_buffer(win[k], k, 0);
        MPI_Win_free(&win[k]);
        free(mem[k]);
    }
    MPI_Group_free(&all);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpix_am_random: %d rounds (seed %u, np %d, %s epochs): every output and count right\n", rounds, seed,
               size, epochs);
    MPI_Finalize();
    return 0;
}

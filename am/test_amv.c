/* The MPIX_Amv tests: remote search with a data-dependent answer per segment,
 * the packing threshold, packed and whole outputs in one batch and in turn. */
#include "test_am.h"

enum { MAXM = 4, NQ = 8 };

/* MPIX_Amv remote search: per query segment, up to MAXM keys of the target that
 * start with the query; counts in elements (chars) of the output. */
static int prefix_search(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot,
                         int *counts, int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)it; (void)ot; (void)pt;
    for (int s = 0; s < nseg; s++) {
        const char *q = (const char *)in + (size_t)s * (size_t)ic;
        char *o = (char *)out + (size_t)s * (size_t)oc;
        int m = 0;
        for (int i = 0; i < pc / KEY && m < MAXM; i++)
            if (!strncmp((char *)pers + i * KEY, q, strlen(q))) memcpy(o + KEY * m++, (char *)pers + i * KEY, KEY);
        counts[s] = m * KEY; /* the bytes past this are never written: packing must not send them */
    }
    return MPI_SUCCESS;
}

/* The same search done locally on the keys `owner` holds. */
static int local_prefix(int owner, const char *q, char *o)
{
    int m = 0;
    for (int j = 0; j < PER_RANK && m < MAXM; j++) {
        char k[KEY];
        key_of(owner, j, k);
        if (!strncmp(k, q, strlen(q))) memcpy(o + KEY * m++, k, KEY);
    }
    return m * KEY;
}

/* MPIX_Amv on `w` to rank t, checked against the local search; with `packed`,
 * the origin bytes past each segment's count must be untouched. */
static void amv_search(MPI_Win w, MPIX_Am_op op, int t, int packed, int pscw)
{
    static const int pre[NQ] = { 18, 2, 150, 100, 9, 7, 1, 5 };
    char q[NQ][KEY], out[NQ][MAXM * KEY], exp[MAXM * KEY];
    int counts[NQ], total = 0, empty = 0, full = 0;
    for (int i = 0; i < NQ; i++) {
        memset(q[i], 0, KEY);
        snprintf(q[i], KEY, "k%d-%d", t, pre[i]);
    }
    memset(out, 0x5a, sizeof out);
    int rc = MPIX_Amv(q, KEY, MPI_CHAR, out, MAXM * KEY, MPI_CHAR, counts, NQ, t, 2 * sizeof(int),
                      PER_RANK * KEY, MPI_CHAR, op, w);
    CHECK(rc == MPI_SUCCESS, "MPIX_Amv returned %d", rc);
    if (pscw) rc = MPI_Win_complete(w);
    else rc = MPI_Win_flush(t, w);
    CHECK(rc == MPI_SUCCESS, "completing MPIX_Amv returned %d", rc);
    for (int i = 0; i < NQ; i++) {
        int n = local_prefix(t, q[i], exp);
        CHECK(counts[i] == n, "Amv query %s: count %d, expected %d", q[i], counts[i], n);
        CHECK(!memcmp(out[i], exp, (size_t)n), "Amv query %s: wrong keys", q[i]);
        for (int b = n; packed && b < MAXM * KEY; b++)
            CHECK(out[i][b] == 0x5a, "Amv query %s: byte %d past the count was written (not packed)", q[i], b);
        total += n;
        empty += n == 0;
        full += n == MAXM * KEY;
    }
    CHECK(empty > 0 && full > 0 && total > 0, "Amv queries should include empty and full answers");
}

/* MPIX_Amv handler generating half of each segment's maximum, and writing a
 * marker past it: sent whole, the marker reaches the origin; packed, it does not. */
static int half(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, int *counts,
                int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)in; (void)ic; (void)it; (void)ot; (void)pers; (void)pc; (void)pt;
    for (int s = 0; s < nseg; s++) {
        memset((char *)out + (size_t)s * (size_t)oc, 1, (size_t)oc / 2);
        memset((char *)out + (size_t)s * (size_t)oc + oc / 2, 0x33, (size_t)(oc - oc / 2));
        counts[s] = oc / 2;
    }
    return MPI_SUCCESS;
}

/* am_pack_threshold is a bound from below, as the paper's: a share of exactly
 * the threshold is sent whole, one under it packed. */
static void amv_threshold(int *mem)
{
    static const char *th[2] = { "0.5", "0.51" };
    MPIX_Am_op op;
    MPIX_Amv_op_create(half, &op);
    for (int k = 0; k < 2; k++) {
        MPI_Info info;
        MPI_Win w;
        MPI_Info_create(&info);
        MPI_Info_set(info, "am_pack_threshold", th[k]);
        MPI_Win_create(mem, 64, 1, info, MPI_COMM_WORLD, &w);
        MPI_Info_free(&info);
        char in[2] = { 0 }, out[2][KEY];
        int counts[2], t = (rank + 1) % size;
        memset(out, 0x5a, sizeof out);
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w);
        MPIX_Amv(in, 1, MPI_CHAR, out, KEY, MPI_CHAR, counts, 2, t, 0, 0, MPI_CHAR, op, w);
        MPI_Win_unlock(t, w);
        for (int s = 0; s < 2; s++) {
            CHECK(counts[s] == KEY / 2 && out[s][0] == 1 && out[s][KEY / 2 - 1] == 1, "threshold %s: segment %d "
                  "count %d", th[k], s, counts[s]);
            CHECK(out[s][KEY - 1] == (k ? 0x5a : 0x33), "threshold %s: a share of 0.5 was %s", th[k],
                  k ? "sent whole (not packed under 0.51)" : "packed (at the threshold it goes whole)");
        }
        MPI_Win_free(&w);
    }
}

/* MPIX_Amv handler filling every segment whole (2s). */
static int fill(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, int *counts,
                int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)in; (void)ic; (void)it; (void)ot; (void)pers; (void)pc; (void)pt;
    memset(out, 2, (size_t)oc * (size_t)nseg);
    for (int s = 0; s < nseg; s++) counts[s] = oc;
    return MPI_SUCCESS;
}

/* MPIX_Am, packed and whole MPIX_Amv outputs in one batch (the origin takes a
 * packed output at arrival and keeps the others): every output where it belongs. */
static void amv_mixed(int *mem, MPIX_Am_op op_touch)
{
    MPIX_Am_op op_half, op_fill;
    MPIX_Amv_op_create(half, &op_half);
    MPIX_Amv_op_create(fill, &op_fill);
    MPI_Win w;
    MPI_Win_create(mem, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    char in[3] = { 0 }, am[2][3][KEY], packed[2][3][KEY], whole[2][KEY];
    int pc[2][3], wc[2], t = (rank + 1) % size;
    memset(am, 0x5a, sizeof am);
    memset(packed, 0x5a, sizeof packed);
    memset(whole, 0x5a, sizeof whole);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w);
    for (int k = 0; k < 2; k++) {
        MPIX_Am(in, 1, MPI_CHAR, am[k], KEY, MPI_CHAR, 3, t, 0, 0, MPI_CHAR, op_touch, w);
        MPIX_Amv(in, 1, MPI_CHAR, packed[k], KEY, MPI_CHAR, pc[k], 3, t, 0, 0, MPI_CHAR, op_half, w);
        if (!k) MPIX_Amv(in, 1, MPI_CHAR, whole, KEY, MPI_CHAR, wc, 2, t, 0, 0, MPI_CHAR, op_fill, w);
    }
    MPI_Win_unlock(t, w);
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 3; s++) {
            for (int b = 0; b < KEY; b++)
                CHECK(am[k][s][b] == 7, "mixed batch: MPIX_Am %d segment %d byte %d is %d", k, s, b, am[k][s][b]);
            CHECK(pc[k][s] == KEY / 2, "mixed batch: packed MPIX_Amv %d segment %d count %d", k, s, pc[k][s]);
            for (int b = 0; b < KEY; b++)
                CHECK(packed[k][s][b] == (b < KEY / 2 ? 1 : 0x5a), "mixed batch: packed MPIX_Amv %d segment %d "
                      "byte %d is %d", k, s, b, packed[k][s][b]);
        }
    for (int s = 0; s < 2; s++) {
        CHECK(wc[s] == KEY, "mixed batch: whole MPIX_Amv segment %d count %d", s, wc[s]);
        for (int b = 0; b < KEY; b++)
            CHECK(whole[s][b] == 2, "mixed batch: whole MPIX_Amv segment %d byte %d is %d", s, b, whole[s][b]);
    }
    MPI_Win_free(&w);
}

/* MPIX_Amv: remote search with a data-dependent answer per segment, under
 * lock/flush (default threshold 0.8), PSCW (threshold 1.0: always packed) and
 * threshold 0 (sent whole); bad input. */
static void amv(int *mem, MPI_Win win, MPIX_Am_op op_search)
{
    MPIX_Am_op op_prefix;
    MPIX_Amv_op_create(prefix_search, &op_prefix);
    MPI_Aint bytes = 2 * sizeof(int) + PER_RANK * KEY;
    MPI_Info info;
    MPI_Win wp, w0, bad;
    MPI_Info_create(&info);
    MPI_Info_set(info, "am_pack_threshold", "2");
    int rc = MPI_Win_create(mem, bytes, 1, info, MPI_COMM_WORLD, &bad);
    CHECK(rc == MPI_ERR_INFO_VALUE, "am_pack_threshold = 2 gave %d", rc);
    MPI_Info_set(info, "am_pack_threshold", "1.0");
    MPI_Win_create(mem, bytes, 1, info, MPI_COMM_WORLD, &wp);
    MPI_Info_set(info, "am_pack_threshold", "0");
    MPI_Win_create(mem, bytes, 1, info, MPI_COMM_WORLD, &w0);
    MPI_Info_free(&info);
    int target = (rank + 1) % size, origin = (rank + size - 1) % size;

    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    amv_search(win, op_prefix, target, 0, 0);
    char q[KEY] = "k", out[KEY];
    int counts[1];
    rc = MPIX_Amv(q, KEY, MPI_CHAR, out, KEY, MPI_CHAR, counts, 1, target, 8, KEY, MPI_CHAR, op_search, win);
    CHECK(rc == MPI_ERR_OP, "MPIX_Amv with an MPIX_Am handler returned %d", rc);
    rc = MPIX_Am(q, KEY, MPI_CHAR, out, KEY, MPI_CHAR, 1, target, 8, KEY, MPI_CHAR, op_prefix, win);
    CHECK(rc == MPI_ERR_OP, "MPIX_Am with an MPIX_Amv handler returned %d", rc);
    rc = MPIX_Amv(q, KEY, MPI_CHAR, out, KEY, MPI_CHAR, NULL, 1, target, 8, KEY, MPI_CHAR, op_prefix, win);
    CHECK(rc == MPI_ERR_COUNT, "MPIX_Amv without counts returned %d", rc);
    MPI_Win_unlock(target, win);

    /* PSCW on the always-packing window */
    MPI_Group world, to, from;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &target, &to);
    MPI_Group_incl(world, 1, &origin, &from);
    MPI_Win_post(from, 0, wp);
    MPI_Win_start(to, 0, wp);
    amv_search(wp, op_prefix, target, 1, 1);
    MPI_Win_wait(wp);
    rc = MPIX_Amv(q, KEY, MPI_CHAR, out, KEY, MPI_CHAR, counts, 1, target, 8, KEY, MPI_CHAR, op_prefix, wp);
    CHECK(rc == MPI_ERR_RMA_SYNC, "MPIX_Amv after MPI_Win_complete returned %d", rc);
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Group_free(&world);

    MPI_Win_lock_all(0, w0);
    amv_search(w0, op_prefix, target, 0, 0);
    MPI_Win_unlock_all(w0);
    MPI_Win_free(&wp);
    MPI_Win_free(&w0);
}
/* MPIX_Amv handler whose input segment says what to generate: {count, value}:
 * count bytes of value, then 0x33 to the segment's end. */
static int as_told(const void *in, int ic, MPI_Datatype it, void *out, int oc, MPI_Datatype ot, int *counts,
                   int nseg, void *pers, int pc, MPI_Datatype pt)
{
    (void)it; (void)ot; (void)pers; (void)pc; (void)pt;
    for (int s = 0; s < nseg; s++) {
        const unsigned char *q = (const unsigned char *)in + (size_t)s * (size_t)ic;
        char *o = (char *)out + (size_t)s * (size_t)oc;
        memset(o, q[1], q[0]);
        memset(o + q[0], 0x33, (size_t)(oc - q[0]));
        counts[s] = q[0];
    }
    return MPI_SUCCESS;
}

/* A target runs an MPIX_Amv as its handler's last one on the window went
 * (packed: a handler call per segment, each output where packing puts it), and
 * mends a wrong guess: AMs packed and whole in turn, partial segments in each.
 * The guess is the handler's own: a second handler's whole AMs between packed
 * ones run whole from the start (the bytes it wrote past each count arrive). */
static void amv_guesses(int *mem)
{
    enum { NAM = 10, NS = 4 };
    static const unsigned char told[NAM][NS] = { /* the default threshold 0.8: packed below 52 of 64 bytes */
        { 16, 4, 0, 8 }, { 15, 16, 14, 15 }, { 3, 16, 5, 1 }, { 2, 9, 16, 0 }, { 16, 16, 16, 13 }, { 0, 0, 0, 0 },
        { 14, 15, 16, 13 }, { 1, 2, 3, 4 }, { 15, 15, 15, 15 }, { 5, 0, 7, 0 },
    };
    static const int second[NAM] = { [6] = 1, [8] = 1 }; /* AMs of the second handler */
    MPIX_Am_op op[2];
    MPIX_Amv_op_create(as_told, &op[0]);
    MPIX_Amv_op_create(as_told, &op[1]);
    MPI_Win w;
    MPI_Win_create(mem, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    unsigned char in[NAM][NS][2];
    char out[NAM][NS][KEY];
    int counts[NAM][NS], t = (rank + 1) % size;
    memset(out, 0x5a, sizeof out);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w);
    for (int k = 0; k < NAM; k++) {
        for (int s = 0; s < NS; s++) {
            in[k][s][0] = told[k][s];
            in[k][s][1] = (unsigned char)(10 * k + s + 1);
        }
        MPIX_Amv(in[k], 2, MPI_CHAR, out[k], KEY, MPI_CHAR, counts[k], NS, t, 0, 0, MPI_CHAR, op[second[k]], w);
    }
    MPI_Win_unlock(t, w);
    for (int k = 0; k < NAM; k++) {
        int sum = 0;
        for (int s = 0; s < NS; s++) sum += told[k][s];
        for (int s = 0; s < NS; s++) {
            CHECK(counts[k][s] == told[k][s], "AMV %d segment %d: count %d, expected %d", k, s, counts[k][s],
                  told[k][s]);
            for (int b = 0; b < KEY; b++) {
                const int v = out[k][s][b];
                CHECK(b < told[k][s] ? v == 10 * k + s + 1 : sum < 52 ? v == 0x5a : !second[k] || v == 0x33,
                      "AMV %d (%s) segment %d byte %d is %d", k, sum < 52 ? "packed" : "whole", s, b, v);
            }
        }
    }
    MPI_Win_free(&w);
}

void test_amv(int *mem, MPI_Win win, MPIX_Am_op op_search, MPIX_Am_op op_touch)
{
    amv(mem, win, op_search);
    amv_threshold(mem);
    amv_mixed(mem, op_touch);
    amv_guesses(mem);
}

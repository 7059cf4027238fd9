/* datatypes: derived datatypes through the PML, 2 ranks (rank 0 sends,
 * rank 1 receives).
 *
 * Types: MPI_Type_vector of doubles with a stride, MPI_Type_indexed of ints,
 * MPI_Type_create_struct {char; double; int[3]} with alignment gaps (resized
 * to the C struct's extent) and a packed struct of the same signature,
 * MPI_Type_create_resized of MPI_INT (extent 12), a vector of that resized
 * type, and several vectors of 3-double blocks back to back (count > 1: the
 * PML's own strided copies, whose large receives come in pieces that cut
 * through blocks). Each case sends one layout and receives into another of the same type
 * signature: non-contiguous -> contiguous, non-contiguous -> different
 * non-contiguous, contiguous -> non-contiguous; small cases, medium ones
 * (16-64 KiB: within a node packed through the sender's stage, rows of 128
 * bytes and the convertor's layouts) and large ones (1-1.6 MB of data, past
 * every eager limit).
 *
 * The test computes every type's byte layout itself (not with MPI), fills the
 * whole send buffer (gaps included) with a pattern and the whole receive
 * buffer with a canary, and checks that the bytes the receive type covers hold
 * exactly the bytes the send type covers, in order, and that every other byte
 * of the receive buffer (gaps, and elements past the message) still holds the
 * canary; MPI_Get_count with the receive type must give the received count.
 * Every case runs blocking (MPI_Send/MPI_Recv) and nonblocking with the
 * datatypes (duplicates) freed with MPI_Type_free while the MPI_Isend/MPI_Irecv
 * is still pending. Also: a receive larger than the message (partial count),
 * and MPI_Get_count = MPI_UNDEFINED / MPI_Get_elements for a message that is
 * not a whole number of the receive type.
 * MPI calls: Type_vector, Type_indexed, Type_create_struct,
 * Type_create_resized, Type_contiguous, Type_dup, Type_commit, Type_free,
 * Send, Recv, Isend, Irecv, Wait, Get_count, Get_elements.
 */
#include "mpitest.h"

#define CANARY 0xA7

typedef struct {
    size_t off, len;
} seg_t;

typedef struct {
    seg_t *s;
    int n, cap;
    size_t span; /* bytes of buffer the layout reaches */
} layout_t;

typedef struct {
    const char *name;
    MPI_Datatype type;
    int count;
    layout_t lay; /* of all count elements */
} desc_t;

struct c_struct {
    char c;
    double d;
    int i[3];
};

static void lay_add(layout_t *L, size_t off, size_t len)
{
    if (L->n == L->cap) {
        L->cap = L->cap ? 2 * L->cap : 64;
        L->s = realloc(L->s, sizeof(seg_t) * (size_t)L->cap);
        CHECK(L->s, "out of memory");
    }
    L->s[L->n].off = off;
    L->s[L->n].len = len;
    L->n++;
    if (off + len > L->span)
        L->span = off + len;
}

/* count elements of a type whose one element is (elem, nelem), at extent. */
static layout_t lay_repeat(const seg_t *elem, int nelem, size_t extent, int count)
{
    layout_t L = {NULL, 0, 0, 0};
    for (int j = 0; j < count; j++)
        for (int k = 0; k < nelem; k++)
            lay_add(&L, (size_t)j * extent + elem[k].off, elem[k].len);
    if ((size_t)count * extent > L.span)
        L.span = (size_t)count * extent;
    return L;
}

static size_t lay_bytes(const layout_t *L)
{
    size_t n = 0;
    for (int i = 0; i < L->n; i++)
        n += L->s[i].len;
    return n;
}

/* ---- type constructors (each returns a committed type and its layout) ---- */

static desc_t d_contig(const char *name, MPI_Datatype basic, size_t basic_size, int count)
{
    desc_t d = {name, basic, count, {NULL, 0, 0, 0}};
    seg_t e = {0, basic_size};
    d.lay = lay_repeat(&e, 1, basic_size, count);
    return d;
}

static desc_t d_vector(const char *name, int nblk, int blen, int stride)
{
    desc_t d = {name, MPI_DATATYPE_NULL, 1, {NULL, 0, 0, 0}};
    MPI_CHECK(MPI_Type_vector(nblk, blen, stride, MPI_DOUBLE, &d.type));
    MPI_CHECK(MPI_Type_commit(&d.type));
    for (int i = 0; i < nblk; i++)
        lay_add(&d.lay, (size_t)i * (size_t)stride * 8, (size_t)blen * 8);
    return d;
}

/* count vectors one after another at the type's extent (the PML's strided
 * layouts: blocks of 3 doubles, 24 bytes, so that the receiver's pieces of a
 * large message cut through blocks). */
static desc_t d_vectors(const char *name, int count, int nblk, int blen, int stride)
{
    desc_t d = d_vector(name, nblk, blen, stride);
    layout_t one = d.lay;
    d.count = count;
    d.lay = lay_repeat(one.s, one.n, ((size_t)(nblk - 1) * (size_t)stride + (size_t)blen) * 8, count);
    free(one.s);
    return d;
}

static const int ix_bl[8] = {3, 1, 4, 1, 5, 9, 2, 6};
static const int ix_dp[8] = {0, 5, 7, 13, 20, 26, 40, 50}; /* extent 56 ints */

static desc_t d_indexed(const char *name, int count)
{
    desc_t d = {name, MPI_DATATYPE_NULL, count, {NULL, 0, 0, 0}};
    MPI_CHECK(MPI_Type_indexed(8, ix_bl, ix_dp, MPI_INT, &d.type));
    MPI_CHECK(MPI_Type_commit(&d.type));
    seg_t e[8];
    for (int k = 0; k < 8; k++)
        e[k] = (seg_t){(size_t)ix_dp[k] * 4, (size_t)ix_bl[k] * 4};
    d.lay = lay_repeat(e, 8, 56 * 4, count);
    return d;
}

static int ix_ints(int count)
{
    int n = 0;
    for (int k = 0; k < 8; k++)
        n += ix_bl[k];
    return n * count;
}

/* packed = 0: the C struct with its gaps; packed = 1: no gaps, extent 21 */
static desc_t d_struct(const char *name, int count, int packed)
{
    desc_t d = {name, MPI_DATATYPE_NULL, count, {NULL, 0, 0, 0}};
    int bl[3] = {1, 1, 3};
    MPI_Aint dp[3];
    MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    size_t extent;
    if (packed) {
        dp[0] = 0;
        dp[1] = 1;
        dp[2] = 9;
        extent = 21;
    } else {
        dp[0] = (MPI_Aint)offsetof(struct c_struct, c);
        dp[1] = (MPI_Aint)offsetof(struct c_struct, d);
        dp[2] = (MPI_Aint)offsetof(struct c_struct, i);
        extent = sizeof(struct c_struct);
    }
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_create_struct(3, bl, dp, ty, &t));
    MPI_CHECK(MPI_Type_create_resized(t, 0, (MPI_Aint)extent, &d.type));
    MPI_CHECK(MPI_Type_free(&t));
    MPI_CHECK(MPI_Type_commit(&d.type));
    seg_t e[3] = {{(size_t)dp[0], 1}, {(size_t)dp[1], 8}, {(size_t)dp[2], 12}};
    d.lay = lay_repeat(e, 3, extent, count);
    return d;
}

static MPI_Datatype resized_int(void)
{
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_create_resized(MPI_INT, 0, 12, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

static desc_t d_resized(const char *name, int count)
{
    desc_t d = {name, resized_int(), count, {NULL, 0, 0, 0}};
    seg_t e = {0, 4};
    d.lay = lay_repeat(&e, 1, 12, count);
    return d;
}

/* vector(nblk, 2, 3) of the resized int: element (i, k) at (3 i + k) * 12 */
static desc_t d_vec_resized(const char *name, int nblk)
{
    desc_t d = {name, MPI_DATATYPE_NULL, 1, {NULL, 0, 0, 0}};
    MPI_Datatype r = resized_int();
    MPI_CHECK(MPI_Type_vector(nblk, 2, 3, r, &d.type));
    MPI_CHECK(MPI_Type_commit(&d.type));
    MPI_CHECK(MPI_Type_free(&r));
    for (int i = 0; i < nblk; i++)
        for (int k = 0; k < 2; k++)
            lay_add(&d.lay, (size_t)(3 * i + k) * 12, 4);
    return d;
}

static void d_free(desc_t *d)
{
    if (d->type != MPI_DOUBLE && d->type != MPI_INT && d->type != MPI_DATATYPE_NULL)
        MPI_CHECK(MPI_Type_free(&d->type));
    free(d->lay.s);
}

/* ---- one case ---- */

static long cases = 0;
static long long bytes_moved = 0;

/* expect_elems: how many of the receive layout's leading bytes the message
 * fills (all of the send layout). */
static void run_case(int id, desc_t *snd, desc_t *rcv, int rcv_expect_count)
{
    size_t nbytes = lay_bytes(&snd->lay);
    for (int nb = 0; nb < 2; nb++) {
        uint64_t seed = mt_seed(61, (uint64_t)id, (uint64_t)nb, 0);
        if (mt_rank == 0) {
            unsigned char *sb = mt_malloc(snd->lay.span);
            mt_fill(sb, snd->lay.span, seed);
            if (nb) {
                MPI_Datatype t = snd->type;
                int dup = t != MPI_DOUBLE && t != MPI_INT;
                if (dup)
                    MPI_CHECK(MPI_Type_dup(snd->type, &t));
                MPI_Request req;
                MPI_CHECK(MPI_Isend(sb, snd->count, t, 1, id, MPI_COMM_WORLD, &req));
                if (dup)
                    MPI_CHECK(MPI_Type_free(&t)); /* while the send is pending */
                MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Send(sb, snd->count, snd->type, 1, id, MPI_COMM_WORLD));
            }
            free(sb);
        } else if (mt_rank == 1) {
            /* expected stream: the send layout applied to the sender's buffer */
            unsigned char *ref = mt_malloc(snd->lay.span);
            mt_fill(ref, snd->lay.span, seed);
            unsigned char *exp = mt_malloc(nbytes);
            size_t p = 0;
            for (int i = 0; i < snd->lay.n; i++) {
                memcpy(exp + p, ref + snd->lay.s[i].off, snd->lay.s[i].len);
                p += snd->lay.s[i].len;
            }
            free(ref);
            unsigned char *rb = mt_malloc(rcv->lay.span);
            memset(rb, CANARY, rcv->lay.span);
            MPI_Status st;
            if (nb) {
                MPI_Datatype t = rcv->type;
                int dup = t != MPI_DOUBLE && t != MPI_INT;
                if (dup)
                    MPI_CHECK(MPI_Type_dup(rcv->type, &t));
                MPI_Request req;
                MPI_CHECK(MPI_Irecv(rb, rcv->count, t, 0, id, MPI_COMM_WORLD, &req));
                if (dup)
                    MPI_CHECK(MPI_Type_free(&t)); /* while the receive is pending */
                MPI_CHECK(MPI_Wait(&req, &st));
            } else {
                MPI_CHECK(MPI_Recv(rb, rcv->count, rcv->type, 0, id, MPI_COMM_WORLD, &st));
            }
            const char *mode = nb ? "nonblocking" : "blocking";
            int cnt = -2;
            MPI_CHECK(MPI_Get_count(&st, rcv->type, &cnt));
            CHECK(cnt == rcv_expect_count, "case %d %s -> %s (%s): MPI_Get_count gave %d, expected %d", id, snd->name,
                  rcv->name, mode, cnt, rcv_expect_count);
            /* covered bytes, in order */
            char *covered = calloc(rcv->lay.span, 1);
            CHECK(covered, "out of memory");
            size_t q = 0;
            for (int i = 0; i < rcv->lay.n && q < nbytes; i++) {
                size_t off = rcv->lay.s[i].off, len = rcv->lay.s[i].len;
                if (len > nbytes - q)
                    len = nbytes - q;
                for (size_t b = 0; b < len; b++) {
                    if (rb[off + b] != exp[q + b])
                        FAIL("case %d %s -> %s (%s): data byte %zu (buffer offset %zu) is 0x%02x, expected 0x%02x", id,
                             snd->name, rcv->name, mode, q + b, off + b, rb[off + b], exp[q + b]);
                    covered[off + b] = 1;
                }
                q += len;
            }
            CHECK(q == nbytes, "case %d: receive layout holds only %zu of %zu bytes (test bug)", id, q, nbytes);
            for (size_t b = 0; b < rcv->lay.span; b++)
                if (!covered[b] && rb[b] != CANARY)
                    FAIL("case %d %s -> %s (%s): byte %zu of the receive buffer is outside the received data but "
                         "was overwritten (0x%02x)",
                         id, snd->name, rcv->name, mode, b, rb[b]);
            free(covered);
            free(rb);
            free(exp);
            cases++;
            bytes_moved += (long long)nbytes;
        }
    }
}

/* count x vector(nblk,3,4) into contiguous doubles and into m vectors of stride 5,
 * contiguous doubles into it, and it into count + 2 of it (partly filled).
 * Returns the last case id. */
static int vector_cases(int id, int count, int nblk, int m)
{
    const int total = count * nblk * 3;
    char n_v[64], n_w[64], n_d[64], n_p[64];
    snprintf(n_v, sizeof n_v, "%d x vector(%d,3,4)", count, nblk);
    snprintf(n_w, sizeof n_w, "%d x vector(%d,3,5)", m, total / (3 * m));
    snprintf(n_d, sizeof n_d, "%d x MPI_DOUBLE", total);
    snprintf(n_p, sizeof n_p, "%d x vector(%d,3,4) (partly filled)", count + 2, nblk);
    desc_t v = d_vectors(n_v, count, nblk, 3, 4);
    desc_t w = d_vectors(n_w, m, total / (3 * m), 3, 5);
    desc_t d = d_contig(n_d, MPI_DOUBLE, 8, total);
    desc_t p = d_vectors(n_p, count + 2, nblk, 3, 4);
    run_case(++id, &v, &d, total);
    run_case(++id, &v, &w, m);
    run_case(++id, &d, &v, count);
    run_case(++id, &v, &p, count);
    d_free(&v);
    d_free(&w);
    d_free(&d);
    d_free(&p);
    return id;
}

static void partial_elements(void)
{
    /* 5 doubles into contiguous(2, double) x 4: count undefined, 5 elements */
    MPI_Datatype pair;
    MPI_CHECK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
    MPI_CHECK(MPI_Type_commit(&pair));
    double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    if (mt_rank == 0) {
        MPI_CHECK(MPI_Send(v, 5, MPI_DOUBLE, 1, 900, MPI_COMM_WORLD));
    } else if (mt_rank == 1) {
        double r[8] = {0};
        MPI_Status st;
        MPI_CHECK(MPI_Recv(r, 4, pair, 0, 900, MPI_COMM_WORLD, &st));
        int cnt = 0, el = 0;
        MPI_CHECK(MPI_Get_count(&st, pair, &cnt));
        MPI_CHECK(MPI_Get_elements(&st, pair, &el));
        CHECK(cnt == MPI_UNDEFINED, "5 doubles received as pairs: MPI_Get_count gave %d, expected MPI_UNDEFINED", cnt);
        CHECK(el == 5, "5 doubles received as pairs: MPI_Get_elements gave %d, expected 5", el);
        for (int i = 0; i < 8; i++)
            CHECK(r[i] == (i < 5 ? v[i] : 0.0), "5 doubles received as pairs: element %d is %g", i, r[i]);
        cases++;
    }
    MPI_CHECK(MPI_Type_free(&pair));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "datatypes", 2);
    int id = 0;
    long small_cases, large_start;

    /* small */
    {
        desc_t vec = d_vector("vector(8,3,5)", 8, 3, 5);
        desc_t vec2 = d_vector("vector(12,2,3)", 12, 2, 3);
        desc_t dbl = d_contig("24 x MPI_DOUBLE", MPI_DOUBLE, 8, 24);
        run_case(++id, &vec, &dbl, 24);
        run_case(++id, &vec, &vec2, 1);
        run_case(++id, &dbl, &vec, 1);
        d_free(&vec);
        d_free(&vec2);
        d_free(&dbl);

        desc_t ix = d_indexed("3 x indexed", 3);
        desc_t ix5 = d_indexed("5 x indexed (partly filled)", 5);
        desc_t ints = d_contig("93 x MPI_INT", MPI_INT, 4, ix_ints(3));
        run_case(++id, &ix, &ints, ix_ints(3));
        run_case(++id, &ix, &ix, 3);
        run_case(++id, &ints, &ix5, 3);
        d_free(&ix);
        d_free(&ix5);
        d_free(&ints);

        desc_t st = d_struct("10 x struct{char;double;int[3]}", 10, 0);
        desc_t pk = d_struct("10 x packed struct", 10, 1);
        run_case(++id, &st, &pk, 10);
        run_case(++id, &st, &st, 10);
        run_case(++id, &pk, &st, 10);
        d_free(&st);
        d_free(&pk);

        desc_t rz = d_resized("20 x resized int (extent 12)", 20);
        desc_t i20 = d_contig("20 x MPI_INT", MPI_INT, 4, 20);
        desc_t vr = d_vec_resized("vector(10,2,3) of resized int", 10);
        run_case(++id, &rz, &i20, 20);
        run_case(++id, &i20, &rz, 20);
        run_case(++id, &vr, &rz, 20);
        d_free(&rz);
        d_free(&i20);
        d_free(&vr);

        id = vector_cases(id, 3, 40, 2);
        partial_elements();
        small_cases = cases;
    }

    /* medium: 16-64 KiB, packed through the sender's stage within a node */
    long medium_start = cases;
    {
        desc_t rows = d_vector("vector(256,16,32) [32 KiB of 128-byte rows]", 256, 16, 32);
        desc_t rows2 = d_vector("vector(512,8,9)", 512, 8, 9);
        desc_t dbl = d_contig("4096 x MPI_DOUBLE", MPI_DOUBLE, 8, 4096);
        run_case(++id, &rows, &dbl, 4096);
        run_case(++id, &rows, &rows2, 1);
        run_case(++id, &dbl, &rows, 1);
        d_free(&rows);
        d_free(&rows2);
        d_free(&dbl);

        desc_t st = d_struct("1500 x struct [31 KB]", 1500, 0);
        desc_t pk = d_struct("1500 x packed struct", 1500, 1);
        run_case(++id, &st, &pk, 1500);
        run_case(++id, &st, &st, 1500);
        d_free(&st);
        d_free(&pk);

        desc_t ix = d_indexed("500 x indexed [62 KB]", 500);
        desc_t ints = d_contig("15500 x MPI_INT", MPI_INT, 4, ix_ints(500));
        run_case(++id, &ix, &ints, ix_ints(500));
        run_case(++id, &ix, &ix, 500);
        d_free(&ix);
        d_free(&ints);
    }
    long medium = cases - medium_start;

    /* large: >= 1 MiB of data */
    large_start = cases;
    {
        desc_t vec = d_vector("vector(100000,2,3) [1.6 MB]", 100000, 2, 3);
        desc_t vec1 = d_vector("vector(200000,1,2)", 200000, 1, 2);
        desc_t dbl = d_contig("200000 x MPI_DOUBLE", MPI_DOUBLE, 8, 200000);
        run_case(++id, &vec, &dbl, 200000);
        run_case(++id, &vec, &vec1, 1);
        run_case(++id, &dbl, &vec, 1);
        d_free(&vec);
        d_free(&vec1);
        d_free(&dbl);

        desc_t st = d_struct("50000 x struct [1.05 MB]", 50000, 0);
        desc_t pk = d_struct("50000 x packed struct", 50000, 1);
        run_case(++id, &st, &pk, 50000);
        run_case(++id, &pk, &st, 50000);
        d_free(&st);
        d_free(&pk);

        desc_t ix = d_indexed("8500 x indexed [1.05 MB]", 8500);
        run_case(++id, &ix, &ix, 8500);
        d_free(&ix);

        id = vector_cases(id, 7, 5000, 1); /* 840 kB */

        desc_t vr = d_vec_resized("vector(150000,2,3) of resized int [1.2 MB]", 150000);
        desc_t i3 = d_contig("300000 x MPI_INT", MPI_INT, 4, 300000);
        run_case(++id, &vr, &i3, 300000);
        d_free(&vr);
        d_free(&i3);
    }
    long large = cases - large_start;
    MPI_CHECK(MPI_Bcast(&small_cases, 1, MPI_LONG, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(&medium, 1, MPI_LONG, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(&large, 1, MPI_LONG, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(&bytes_moved, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD));
    return mt_finish("%ld small, %ld medium (16-64 KiB) and %ld large (>= 1 MB) derived-datatype receives "
                     "(vector, indexed, struct with "
                     "gaps, resized, nested; blocking and nonblocking with Type_free while pending), %.1f MB "
                     "verified, gaps untouched",
                     small_cases, medium, large, (double)bytes_moved / 1e6);
}

/* ordering: MPI matching order with several senders (>= 3 ranks; rank 0
 * receives, every other rank sends), on MPI_COMM_WORLD. Messages carry
 * (sender, per-sender sequence number, tag, size) and a pattern; 3 tags; most
 * are small, some 3-9 KiB and some 72 KiB (past the eager limits of shared
 * memory and TCP), so non-overtaking is checked across protocols.
 *
 * Phase A (unexpected queue, blocking receives): every sender MPI_Isends
 * 1500 messages at once. Rank 0 receives them one at a time with a random mix
 * of (ANY_SOURCE, ANY_TAG), (src, ANY_TAG), (ANY_SOURCE, tag) and (src, tag)
 * receives (only ones some message will still match). Each receive must get
 * exactly the earliest not yet received message of the sender named in its
 * status that matches the receive's tag (so wildcard receives see every
 * sender's sequence in order, and a large message is never overtaken).
 *
 * Phase B (posted queue, one sender at a time): rank 0 pre-posts 48 MPI_Irecvs
 * in random order, mixing the four kinds, then tells the sender to go. With a
 * single sender the outcome is fully determined (each message takes the
 * earliest-posted matching receive), so rank 0 computes it and checks that
 * every receive got exactly the predicted message. 30 rounds, senders rotate.
 *
 * Phase C (posted queue, all senders at once): rank 0 pre-posts one receive
 * per message in four groups, (src, tag) first, then (src, ANY_TAG), then
 * (ANY_SOURCE, tag), then (ANY_SOURCE, ANY_TAG) (random order inside a group;
 * sizes chosen so that every order of arrival completes), and checks that some
 * interleaving of the senders' streams explains the result under the rule
 * "each message takes the earliest-posted open receive that matches it".
 *
 * MPI calls: Isend, Recv, Irecv, Waitall, Send (control), Comm_dup.
 */
#include "mpitest.h"

#define NTAGS 3
#define N_A 1500
#define N_B 48
#define ROUNDS_B 30
#define N_C 64
#define ROUNDS_C 4
#define MAXMSG (72 * 1024 + 1024)
#define MAGIC 0x0BDE0001
#define TAG_GO 7

typedef struct {
    int32_t magic, src, seq, tag, phase, size;
} hdr_t;

typedef struct {
    int n;
    int *tag;
    int *size;
} sched_t;

typedef struct {
    int src, tag; /* MPI_ANY_SOURCE / MPI_ANY_TAG allowed */
} rq_t;

static MPI_Comm ctl; /* control messages, kept apart from the data on WORLD */

static void make_sched(sched_t *sc, int phase, int round, int sender, int n)
{
    mt_rng r;
    mt_rng_init(&r, mt_seed(77, (uint64_t)phase, (uint64_t)round, (uint64_t)sender));
    sc->n = n;
    sc->tag = mt_malloc(sizeof(int) * (size_t)n);
    sc->size = mt_malloc(sizeof(int) * (size_t)n);
    for (int k = 0; k < n; k++) {
        sc->tag[k] = (int)mt_rng_below(&r, NTAGS);
        uint32_t c = mt_rng_below(&r, 100);
        if (c < 3)
            sc->size[k] = 72 * 1024 + (int)mt_rng_below(&r, 1000);
        else if (c < 10)
            sc->size[k] = 3000 + (int)mt_rng_below(&r, 6000);
        else
            sc->size[k] = (int)sizeof(hdr_t) + (int)mt_rng_below(&r, 180);
    }
}

static void free_sched(sched_t *sc)
{
    free(sc->tag);
    free(sc->size);
}

static uint64_t payload_seed(int phase, int round, int src, int seq)
{
    return mt_seed((uint64_t)phase, (uint64_t)round, (uint64_t)src, (uint64_t)seq);
}

/* Sender: MPI_Isend the whole schedule, then wait for all of it. */
static void send_all(const sched_t *sc, int phase, int round)
{
    size_t total = 0;
    for (int k = 0; k < sc->n; k++)
        total += (size_t)sc->size[k];
    unsigned char *buf = mt_malloc(total);
    MPI_Request *req = mt_malloc(sizeof(MPI_Request) * (size_t)sc->n);
    size_t off = 0;
    for (int k = 0; k < sc->n; k++) {
        hdr_t h = {MAGIC, mt_rank, k, sc->tag[k], phase, sc->size[k]};
        memcpy(buf + off, &h, sizeof h);
        mt_fill(buf + off + sizeof h, (size_t)sc->size[k] - sizeof h, payload_seed(phase, round, mt_rank, k));
        MPI_CHECK(MPI_Isend(buf + off, sc->size[k], MPI_BYTE, 0, sc->tag[k], MPI_COMM_WORLD, &req[k]));
        off += (size_t)sc->size[k];
    }
    MPI_CHECK(MPI_Waitall(sc->n, req, MPI_STATUSES_IGNORE));
    free(req);
    free(buf);
}

/* Receiver: validate a received message against its status and schedule;
 * returns its sequence number. */
static int check_msg(const unsigned char *buf, const MPI_Status *st, int phase, int round, sched_t *sc,
                     const char *where)
{
    hdr_t h;
    int n = mt_count_bytes(st);
    CHECK(n >= (int)sizeof h, "%s: message of %d bytes is too short", where, n);
    memcpy(&h, buf, sizeof h);
    CHECK(h.magic == MAGIC && h.phase == phase, "%s: bad header (magic %x phase %d)", where, (unsigned)h.magic,
          h.phase);
    CHECK(h.src == st->MPI_SOURCE, "%s: payload says sender %d, MPI_SOURCE is %d", where, h.src, st->MPI_SOURCE);
    CHECK(h.src >= 1 && h.src < mt_size, "%s: bad sender %d", where, h.src);
    const sched_t *s = &sc[h.src];
    CHECK(h.seq >= 0 && h.seq < s->n, "%s: bad sequence number %d from %d", where, h.seq, h.src);
    CHECK(h.tag == st->MPI_TAG && h.tag == s->tag[h.seq], "%s: sender %d seq %d: tag %d, MPI_TAG %d, expected %d",
          where, h.src, h.seq, h.tag, st->MPI_TAG, s->tag[h.seq]);
    CHECK(n == s->size[h.seq] && h.size == n, "%s: sender %d seq %d: %d bytes, expected %d", where, h.src, h.seq, n,
          s->size[h.seq]);
    long bad = mt_check(buf + sizeof h, (size_t)n - sizeof h, payload_seed(phase, round, h.src, h.seq));
    CHECK(bad < 0, "%s: sender %d seq %d: payload byte %ld wrong", where, h.src, h.seq, bad + (long)sizeof h);
    return h.seq;
}

static const char *rq_str(rq_t r)
{
    static char b[64];
    char s[16], t[16];
    if (r.src == MPI_ANY_SOURCE)
        snprintf(s, sizeof s, "ANY_SOURCE");
    else
        snprintf(s, sizeof s, "%d", r.src);
    if (r.tag == MPI_ANY_TAG)
        snprintf(t, sizeof t, "ANY_TAG");
    else
        snprintf(t, sizeof t, "%d", r.tag);
    snprintf(b, sizeof b, "(%s, %s)", s, t);
    return b;
}

static int rq_matches(rq_t r, int src, int tag)
{
    return (r.src == MPI_ANY_SOURCE || r.src == src) && (r.tag == MPI_ANY_TAG || r.tag == tag);
}

/* Complete n pre-posted receives. A receive that never completes means a
 * message went somewhere MPI's rules do not allow (the receive sets are built
 * so that every arrival order completes): after 10 s, name the first pending
 * receive instead of hanging. */
static void wait_preposted(int n, MPI_Request *req, MPI_Status *st, const rq_t *rq, const char *what)
{
    int *idx = mt_malloc(sizeof(int) * (size_t)n);
    MPI_Status *tmp = mt_malloc(sizeof(MPI_Status) * (size_t)n);
    int left = n;
    double t0 = mt_now();
    while (left > 0) {
        int out = 0;
        MPI_CHECK(MPI_Testsome(n, req, &out, idx, tmp));
        if (out == MPI_UNDEFINED)
            break;
        for (int i = 0; i < out; i++)
            st[idx[i]] = tmp[i];
        left -= out;
        if (left > 0 && mt_now() - t0 > 10) {
            int first = -1;
            for (int i = 0; i < n && first < 0; i++)
                if (req[i] != MPI_REQUEST_NULL)
                    first = i;
            FAIL("%s: %d of %d pre-posted receives still pending after 10 s, the first is receive %d %s: some "
                 "message did not take the earliest-posted receive that matches it",
                 what, left, n, first, rq_str(rq[first]));
        }
    }
    free(idx);
    free(tmp);
}

/* ---------------- phase A ---------------- */

static long phase_a(void)
{
    const int phase = 1;
    int P = mt_size;
    sched_t *sc = mt_malloc(sizeof(sched_t) * (size_t)P);
    for (int s = 1; s < P; s++)
        make_sched(&sc[s], phase, 0, s, N_A);
    if (mt_rank != 0) {
        send_all(&sc[mt_rank], phase, 0);
        for (int s = 1; s < P; s++)
            free_sched(&sc[s]);
        free(sc);
        return 0;
    }
    /* per sender and tag: the sequence numbers in order, and the next one */
    int *lists = mt_malloc(sizeof(int) * (size_t)P * NTAGS * N_A);
    int *len = calloc((size_t)P * NTAGS, sizeof(int));
    int *pos = calloc((size_t)P * NTAGS, sizeof(int));
    CHECK(len && pos, "out of memory");
#define L(s, t) ((s) * NTAGS + (t))
    for (int s = 1; s < P; s++)
        for (int k = 0; k < N_A; k++) {
            int t = sc[s].tag[k];
            lists[(size_t)L(s, t) * N_A + (size_t)len[L(s, t)]++] = k;
        }
    unsigned char *buf = mt_malloc(MAXMSG);
    mt_rng r;
    mt_rng_init(&r, 4242);
    long total = (long)(P - 1) * N_A;
    for (long i = 0; i < total; i++) {
        rq_t q = {MPI_ANY_SOURCE, MPI_ANY_TAG};
        int kind = (int)mt_rng_below(&r, 4);
        if (kind == 1 || kind == 3) { /* a specific sender (and tag) with messages left */
            int tries = 0;
            for (;;) {
                int s = 1 + (int)mt_rng_below(&r, (uint32_t)(P - 1));
                int t = (int)mt_rng_below(&r, NTAGS);
                int left_s = 0;
                for (int u = 0; u < NTAGS; u++)
                    left_s += len[L(s, u)] - pos[L(s, u)];
                if (kind == 1 && left_s > 0) {
                    q.src = s;
                    break;
                }
                if (kind == 3 && pos[L(s, t)] < len[L(s, t)]) {
                    q.src = s;
                    q.tag = t;
                    break;
                }
                if (++tries > 1000) {
                    kind = 0;
                    break;
                }
            }
        } else if (kind == 2) { /* a specific tag some sender still has */
            int t0 = (int)mt_rng_below(&r, NTAGS), found = -1;
            for (int u = 0; u < NTAGS && found < 0; u++) {
                int t = (t0 + u) % NTAGS;
                for (int s = 1; s < P; s++)
                    if (pos[L(s, t)] < len[L(s, t)])
                        found = t;
            }
            if (found >= 0)
                q.tag = found;
            else
                kind = 0;
        }
        MPI_Status st;
        MPI_CHECK(MPI_Recv(buf, MAXMSG, MPI_BYTE, q.src, q.tag, MPI_COMM_WORLD, &st));
        char where[96];
        snprintf(where, sizeof where, "phase A receive %ld %s", i, rq_str(q));
        int seq = check_msg(buf, &st, phase, 0, sc, where);
        int s = st.MPI_SOURCE;
        CHECK(q.src == MPI_ANY_SOURCE || q.src == s, "%s: got a message from %d", where, s);
        /* the earliest unreceived message of s that matches the receive's tag */
        int expect = -1, et = -1;
        for (int t = 0; t < NTAGS; t++) {
            if (q.tag != MPI_ANY_TAG && q.tag != t)
                continue;
            if (pos[L(s, t)] < len[L(s, t)]) {
                int k = lists[(size_t)L(s, t) * N_A + (size_t)pos[L(s, t)]];
                if (expect < 0 || k < expect) {
                    expect = k;
                    et = t;
                }
            }
        }
        CHECK(seq == expect, "%s: got sender %d seq %d, but MPI order requires seq %d (non-overtaking violated)",
              where, s, seq, expect);
        pos[L(s, et)]++;
    }
#undef L
    free(buf);
    free(lists);
    free(len);
    free(pos);
    for (int s = 1; s < P; s++)
        free_sched(&sc[s]);
    free(sc);
    return total;
}

/* ---------------- phase B ---------------- */

/* Single sender src, messages in order, receives all posted beforehand:
 * exp[i] = message taken by receive i; returns the index of the first message
 * that finds no open receive, or -1. */
static int simulate_one(const rq_t *rq, int n, const sched_t *sc, int src, int *exp)
{
    for (int i = 0; i < n; i++)
        exp[i] = -1;
    for (int k = 0; k < sc->n; k++) {
        int hit = -1;
        for (int i = 0; i < n && hit < 0; i++)
            if (exp[i] < 0 && rq_matches(rq[i], src, sc->tag[k]))
                hit = i;
        if (hit < 0)
            return k;
        exp[hit] = k;
    }
    return -1;
}

static long phase_b(void)
{
    const int phase = 2;
    int P = mt_size;
    long checked = 0;
    for (int round = 0; round < ROUNDS_B; round++) {
        int s = 1 + round % (P - 1);
        sched_t sc;
        make_sched(&sc, phase, round, s, N_B);
        if (mt_rank == s) {
            MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, ctl, MPI_STATUS_IGNORE));
            send_all(&sc, phase, round);
        } else if (mt_rank == 0) {
            rq_t rq[N_B];
            int exp[N_B];
            mt_rng r;
            mt_rng_init(&r, mt_seed(99, (uint64_t)round, 0, 0));
            for (int i = 0; i < N_B; i++) {
                uint32_t kind = mt_rng_below(&r, 8); /* more specific than wildcard kinds */
                rq[i].src = (kind & 1) ? MPI_ANY_SOURCE : s;
                rq[i].tag = (kind & 6) ? (int)mt_rng_below(&r, NTAGS) : MPI_ANY_TAG;
            }
            /* make it complete: turn the last open receive into (ANY, ANY)
             * until every message finds one (each step adds a full wildcard) */
            while (simulate_one(rq, N_B, &sc, s, exp) >= 0) {
                int last = -1;
                for (int i = 0; i < N_B; i++)
                    if (exp[i] < 0 && !(rq[i].src == MPI_ANY_SOURCE && rq[i].tag == MPI_ANY_TAG))
                        last = i;
                CHECK(last >= 0, "phase B: internal error building the receive list");
                rq[last].src = MPI_ANY_SOURCE;
                rq[last].tag = MPI_ANY_TAG;
            }
            unsigned char *buf = mt_malloc((size_t)N_B * MAXMSG);
            MPI_Request req[N_B];
            MPI_Status st[N_B];
            for (int i = 0; i < N_B; i++)
                MPI_CHECK(MPI_Irecv(buf + (size_t)i * MAXMSG, MAXMSG, MPI_BYTE, rq[i].src, rq[i].tag, MPI_COMM_WORLD,
                                    &req[i]));
            MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, s, TAG_GO, ctl));
            char what[64];
            snprintf(what, sizeof what, "phase B round %d", round);
            wait_preposted(N_B, req, st, rq, what);
            sched_t *all = mt_malloc(sizeof(sched_t) * (size_t)P);
            all[s] = sc;
            for (int i = 0; i < N_B; i++) {
                char where[96];
                snprintf(where, sizeof where, "phase B round %d receive %d %s", round, i, rq_str(rq[i]));
                CHECK(st[i].MPI_SOURCE == s, "%s: MPI_SOURCE %d, only %d sends", where, st[i].MPI_SOURCE, s);
                int seq = check_msg(buf + (size_t)i * MAXMSG, &st[i], phase, round, all, where);
                CHECK(seq == exp[i],
                      "%s: got seq %d, but the earliest-posted-receive rule gives it seq %d", where, seq, exp[i]);
                checked++;
            }
            free(all);
            free(buf);
        }
        free_sched(&sc);
    }
    return checked;
}

/* ---------------- phase C ---------------- */

static long phase_c(void)
{
    const int phase = 3;
    int P = mt_size;
    long checked = 0;
    for (int round = 0; round < ROUNDS_C; round++) {
        sched_t *sc = mt_malloc(sizeof(sched_t) * (size_t)P);
        for (int s = 1; s < P; s++)
            make_sched(&sc[s], phase, round, s, N_C);
        if (mt_rank != 0) {
            MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, ctl, MPI_STATUS_IGNORE));
            send_all(&sc[mt_rank], phase, round);
        } else {
            int n = (P - 1) * N_C;
            rq_t *rq = mt_malloc(sizeof(rq_t) * (size_t)n);
            int nr = 0;
            mt_rng r;
            mt_rng_init(&r, mt_seed(123, (uint64_t)round, 0, 0));
            /* group sizes: c1 (s,t) <= n(s,t); c2(s) <= what bypasses group 1;
             * c3(t) <= what of tag t reaches group 3; the rest (ANY, ANY). */
            int l3[NTAGS] = {0};
            rq_t *g1 = mt_malloc(sizeof(rq_t) * (size_t)n), *g2 = mt_malloc(sizeof(rq_t) * (size_t)n);
            rq_t *g3 = mt_malloc(sizeof(rq_t) * (size_t)n);
            int n1 = 0, n2 = 0, n3 = 0;
            for (int s = 1; s < P; s++) {
                int nt[NTAGS] = {0};
                for (int k = 0; k < N_C; k++)
                    nt[sc[s].tag[k]]++;
                int c1[NTAGS];
                for (int t = 0; t < NTAGS; t++) {
                    c1[t] = (int)mt_rng_below(&r, (uint32_t)nt[t] + 1);
                    for (int j = 0; j < c1[t]; j++)
                        g1[n1++] = (rq_t){s, t};
                }
                /* messages of s that get past group 1, in order */
                int used[NTAGS] = {0}, bypass = 0;
                int *byp_tag = mt_malloc(sizeof(int) * N_C);
                for (int k = 0; k < N_C; k++) {
                    int t = sc[s].tag[k];
                    if (used[t] < c1[t])
                        used[t]++;
                    else
                        byp_tag[bypass++] = t;
                }
                int c2 = (int)mt_rng_below(&r, (uint32_t)bypass + 1);
                for (int j = 0; j < c2; j++)
                    g2[n2++] = (rq_t){s, MPI_ANY_TAG};
                for (int j = c2; j < bypass; j++)
                    l3[byp_tag[j]]++;
                free(byp_tag);
            }
            for (int t = 0; t < NTAGS; t++) {
                int c3 = (int)mt_rng_below(&r, (uint32_t)l3[t] + 1);
                for (int j = 0; j < c3; j++)
                    g3[n3++] = (rq_t){MPI_ANY_SOURCE, t};
            }
            /* shuffle inside each group, then post group by group */
            rq_t *gs[3] = {g1, g2, g3};
            int gn[3] = {n1, n2, n3};
            for (int g = 0; g < 3; g++) {
                for (int i = gn[g] - 1; i > 0; i--) {
                    int j = (int)mt_rng_below(&r, (uint32_t)i + 1);
                    rq_t tmp = gs[g][i];
                    gs[g][i] = gs[g][j];
                    gs[g][j] = tmp;
                }
                for (int i = 0; i < gn[g]; i++)
                    rq[nr++] = gs[g][i];
            }
            while (nr < n)
                rq[nr++] = (rq_t){MPI_ANY_SOURCE, MPI_ANY_TAG};
            free(g1);
            free(g2);
            free(g3);

            unsigned char *buf = mt_malloc((size_t)n * MAXMSG);
            MPI_Request *req = mt_malloc(sizeof(MPI_Request) * (size_t)n);
            MPI_Status *st = mt_malloc(sizeof(MPI_Status) * (size_t)n);
            for (int i = 0; i < n; i++)
                MPI_CHECK(MPI_Irecv(buf + (size_t)i * MAXMSG, MAXMSG, MPI_BYTE, rq[i].src, rq[i].tag, MPI_COMM_WORLD,
                                    &req[i]));
            for (int s = 1; s < P; s++)
                MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, s, TAG_GO, ctl));
            char what[64];
            snprintf(what, sizeof what, "phase C round %d", round);
            wait_preposted(n, req, st, rq, what);

            /* which receive got which message */
            int *recv_of = mt_malloc(sizeof(int) * (size_t)P * N_C);
            for (int i = 0; i < P * N_C; i++)
                recv_of[i] = -1;
            for (int i = 0; i < n; i++) {
                char where[96];
                snprintf(where, sizeof where, "phase C round %d receive %d %s", round, i, rq_str(rq[i]));
                int seq = check_msg(buf + (size_t)i * MAXMSG, &st[i], phase, round, sc, where);
                int s = st[i].MPI_SOURCE;
                CHECK(rq_matches(rq[i], s, st[i].MPI_TAG), "%s: got a message from %d tag %d that does not match",
                      where, s, st[i].MPI_TAG);
                CHECK(recv_of[s * N_C + seq] < 0, "%s: sender %d seq %d received twice", where, s, seq);
                recv_of[s * N_C + seq] = i;
                checked++;
            }
            /* replay: repeatedly let some sender's next message "arrive" if the
             * receive it got is the earliest-posted open receive matching it.
             * Such a step never invalidates another, so greedy is exact. */
            int *open = mt_malloc(sizeof(int) * (size_t)n);
            int *next = calloc((size_t)P, sizeof(int));
            CHECK(next, "out of memory");
            for (int i = 0; i < n; i++)
                open[i] = 1;
            int progress = 1, left = n;
            while (progress && left > 0) {
                progress = 0;
                for (int s = 1; s < P; s++) {
                    while (next[s] < N_C) {
                        int k = next[s], t = sc[s].tag[k], e = -1;
                        for (int i = 0; i < n && e < 0; i++)
                            if (open[i] && rq_matches(rq[i], s, t))
                                e = i;
                        if (e != recv_of[s * N_C + k])
                            break;
                        open[e] = 0;
                        next[s]++;
                        left--;
                        progress = 1;
                    }
                }
            }
            if (left > 0) {
                for (int s = 1; s < P; s++)
                    if (next[s] < N_C) {
                        int k = next[s], t = sc[s].tag[k], e = -1;
                        for (int i = 0; i < n && e < 0; i++)
                            if (open[i] && rq_matches(rq[i], s, t))
                                e = i;
                        FAIL("phase C round %d: no arrival order explains the matching: sender %d seq %d (tag %d) went "
                             "to receive %d %s, but receive %d %s was posted earlier, still open and matches it",
                             round, s, k, t, recv_of[s * N_C + k], rq_str(rq[recv_of[s * N_C + k]]), e,
                             e >= 0 ? rq_str(rq[e]) : "-");
                    }
            }
            free(open);
            free(next);
            free(recv_of);
            free(st);
            free(req);
            free(buf);
            free(rq);
        }
        for (int s = 1; s < P; s++)
            free_sched(&sc[s]);
        free(sc);
    }
    return checked;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "ordering", 3);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl));
    long a = phase_a();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long b = phase_b();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    long c = phase_c();
    MPI_CHECK(MPI_Comm_free(&ctl));
    return mt_finish("%d senders; %ld wildcard/specific receives in MPI order, %ld pre-posted receives matched as "
                     "predicted, %ld concurrent pre-posted receives consistent with MPI order",
                     mt_size - 1, a, b, c);
}

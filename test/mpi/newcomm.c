/* newcomm: traffic on communicators right after their creation, >= 3 ranks
 * (run with 4). The sender sends on a new communicator as soon as its own
 * creation call returns, while the receivers are still busy (they sleep
 * before receiving), so messages may reach a process that has not finished
 * setting the communicator up, and must be kept until it is.
 *
 *  A. MPI_Comm_dup(WORLD): rank 0 MPI_Isends to every other rank at once;
 *     the others sleep 100 ms after their dup returns, then receive (source
 *     0, tag 1) and check the payload.
 *  B. MPI_Comm_split, the last world rank excluded (MPI_UNDEFINED ->
 *     MPI_COMM_NULL), key = -rank so ranks are reversed: new rank 0 sends at
 *     once; receivers sleep 50 ms and receive with ANY_SOURCE; MPI_SOURCE must
 *     be 0 in the new numbering and the payload names the right world rank.
 *  C. MPI_Comm_create from the group {world 2, 0, 1}: new rank 0 (world 2)
 *     sends at once; the others sleep 50 ms and receive.
 *  D. Eight MPI_Comm_dups in a row; after each, rank 0 sends on the new one
 *     (same tag 0 everywhere, payload = its index). The others receive only
 *     after all eight exist and a sleep, in reverse order, with ANY_SOURCE /
 *     ANY_TAG: each communicator must deliver its own message only.
 *  E. The eight are freed and eight new ones created (context ids are
 *     reused), and D repeated with new payloads: nothing stale may appear.
 *  F. Only with NEWCOMM_LIMIT=L (the run limits context ids to L, e.g.
 *     pml_ubermatch_max_contextid): MPI_Comm_dup until one fails; it must
 *     fail (an error returned, nothing aborted) before L dups, the last one
 *     made must carry a message, and once they are freed a dup works again.
 * MPI calls: Comm_dup, Comm_split, Comm_create, Comm_group, Group_incl,
 * Comm_free, Isend, Send, Recv, Waitall, Comm_rank, Comm_size.
 */
#include "mpitest.h"

#define K 8

static long checked = 0;

static void expect_int(MPI_Comm c, int src, int tag, int want_value, int want_src, const char *what)
{
    int v[2] = {-1, -1};
    MPI_Status st;
    MPI_CHECK(MPI_Recv(v, 2, MPI_INT, src, tag, c, &st));
    CHECK(st.MPI_SOURCE == want_src && v[0] == want_value,
          "%s: got value %d from MPI_SOURCE %d (sender's world rank %d), expected value %d from %d", what, v[0],
          st.MPI_SOURCE, v[1], want_value, want_src);
    checked++;
}

/* Isend (value, world rank) to every other rank of c; returns how many
 * requests were added to req. */
static int isend_to_all(MPI_Comm c, int *v, int value, int tag, MPI_Request *req)
{
    int r, n, m = 0;
    MPI_CHECK(MPI_Comm_rank(c, &r));
    MPI_CHECK(MPI_Comm_size(c, &n));
    v[0] = value;
    v[1] = mt_rank;
    for (int d = 0; d < n; d++)
        if (d != r)
            MPI_CHECK(MPI_Isend(v, 2, MPI_INT, d, tag, c, &req[m++]));
    return m;
}

static void send_to_all(MPI_Comm c, int value, int tag)
{
    MPI_Request *req = mt_malloc(sizeof(MPI_Request) * (size_t)mt_size);
    int v[2];
    int m = isend_to_all(c, v, value, tag, req);
    MPI_CHECK(MPI_Waitall(m, req, MPI_STATUSES_IGNORE));
    free(req);
}

static void many(int round)
{
    MPI_Comm c[K];
    /* rank 0 keeps all its sends outstanding until every dup exists, so
     * nothing depends on eager buffering */
    MPI_Request *req = mt_malloc(sizeof(MPI_Request) * (size_t)(K * mt_size));
    int v[K][2], m = 0;
    for (int i = 0; i < K; i++) {
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
        if (mt_rank == 0)
            m += isend_to_all(c[i], v[i], 1000 * round + i, 0, req + m);
    }
    if (mt_rank != 0) {
        mt_sleep_ms(50);
        for (int i = K - 1; i >= 0; i--) {
            char what[96];
            snprintf(what, sizeof what, "round %c, communicator %d of %d (received in reverse order)", 'D' + round, i,
                     K);
            expect_int(c[i], MPI_ANY_SOURCE, MPI_ANY_TAG, 1000 * round + i, 0, what);
        }
    }
    MPI_CHECK(MPI_Waitall(m, req, MPI_STATUSES_IGNORE));
    free(req);
    for (int i = 0; i < K; i++)
        MPI_CHECK(MPI_Comm_free(&c[i]));
}

/* Dups until one fails (collectively: every rank's dup fails or none does). */
static void exhaust(int limit)
{
    CHECK(limit > 0, "NEWCOMM_LIMIT=%d", limit);
    MPI_Comm *made = mt_malloc(sizeof(MPI_Comm) * (size_t)limit);
    int n = 0, rc = MPI_SUCCESS;
    while (n < limit) {
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &made[n]);
        if (rc != MPI_SUCCESS)
            break;
        n++;
    }
    CHECK(rc != MPI_SUCCESS, "round F: %d dups made, none refused (the limit was %d)", n, limit);
    CHECK(n > 0, "round F: the first dup failed already");
    if (mt_rank == 0)
        send_to_all(made[n - 1], 66, 6);
    else
        expect_int(made[n - 1], 0, 6, 66, 0, "round F (the last communicator made)");
    for (int i = 0; i < n; i++)
        MPI_CHECK(MPI_Comm_free(&made[i]));
    MPI_Comm again;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &again));
    MPI_CHECK(MPI_Comm_free(&again));
    if (mt_rank == 0)
        printf("newcomm: round F: %d dups made, the next refused (%s), all freed, a dup works again\n", n,
               mt_errstr(rc));
    free(made);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "newcomm", 3);
    int n = mt_size;

    /* A */
    {
        MPI_Comm d;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        if (mt_rank == 0) {
            send_to_all(d, 11, 1);
        } else {
            mt_sleep_ms(100);
            expect_int(d, 0, 1, 11, 0, "round A (dup, receiver 100 ms late)");
        }
        MPI_CHECK(MPI_Comm_free(&d));
    }

    /* B */
    {
        MPI_Comm s;
        int in = mt_rank < n - 1;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, in ? 5 : MPI_UNDEFINED, -mt_rank, &s));
        if (!in) {
            CHECK(s == MPI_COMM_NULL, "round B: MPI_UNDEFINED color did not give MPI_COMM_NULL");
        } else {
            int r, sn;
            MPI_CHECK(MPI_Comm_rank(s, &r));
            MPI_CHECK(MPI_Comm_size(s, &sn));
            CHECK(sn == n - 1 && r == n - 2 - mt_rank, "round B: split rank %d of %d, expected %d of %d", r, sn,
                  n - 2 - mt_rank, n - 1);
            if (r == 0) {
                send_to_all(s, 22, 2);
            } else {
                mt_sleep_ms(50);
                expect_int(s, MPI_ANY_SOURCE, 2, 22, 0, "round B (split, reversed keys)");
            }
            MPI_CHECK(MPI_Comm_free(&s));
        }
    }

    /* C */
    {
        MPI_Group wg, g;
        int members[3] = {2, 0, 1};
        MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
        MPI_CHECK(MPI_Group_incl(wg, 3, members, &g));
        MPI_Comm c;
        MPI_CHECK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        if (mt_rank > 2) {
            CHECK(c == MPI_COMM_NULL, "round C: a rank outside the group got a communicator");
        } else {
            int r;
            MPI_CHECK(MPI_Comm_rank(c, &r));
            int want = mt_rank == 2 ? 0 : mt_rank + 1;
            CHECK(r == want, "round C: rank %d in the created communicator, expected %d", r, want);
            if (r == 0) {
                send_to_all(c, 33, 3);
            } else {
                mt_sleep_ms(50);
                expect_int(c, 0, 3, 33, 0, "round C (Comm_create)");
            }
            MPI_CHECK(MPI_Comm_free(&c));
        }
        MPI_CHECK(MPI_Group_free(&g));
        MPI_CHECK(MPI_Group_free(&wg));
    }

    /* D, E */
    many(0);
    many(1);

    /* F */
    const char *limit_env = getenv("NEWCOMM_LIMIT");
    if (limit_env != NULL) {
        exhaust(atoi(limit_env));
    }

    long total = 0;
    MPI_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    return mt_finish("%ld messages sent right after Comm_dup/Comm_split/Comm_create and received late on the right "
                     "communicator; 2 x %d back-to-back dups (the second after freeing the first) kept apart",
                     total, K);
}

/* assertions: MPI-4 info assertions on communicators (mpi_assert_no_any_source,
 * mpi_assert_no_any_tag, mpi_assert_allow_overtaking, mpi_assert_exact_length) and
 * ubermatch's own key ubermatch_no_unexpected. 2 ranks.
 *
 * Under any PML: communicators made with each assertion (MPI_Comm_dup_with_info,
 * MPI_Comm_split_type with info, MPI_Comm_set_info) carry point-to-point traffic in
 * MPI order (receives pre-posted, 5 tags; and, without ubermatch_no_unexpected, sent
 * before the receives) and collectives (whose internal traffic may use wildcards the
 * user may not). Under mpi_assert_allow_overtaking messages of one (source, tag) may
 * arrive in any order: each must arrive once, with its content, at a receive of its
 * tag (the multiset is checked, not the order).
 *
 * Under pml/ubermatch with pml_ubermatch_assertions honour (the default; read through
 * MPI_T control variables), also:
 *  - the performance variable pml_ubermatch_relaxed says that the relaxed engine the
 *    assertions allow was chosen (1 no_any_source, 3 with no_any_tag as well, +4 with
 *    ubermatch_no_unexpected, +8 with mpi_assert_allow_overtaking: the overtake
 *    engines; 0 where no relaxed engine fits), also after
 *    MPI_Comm_set_info sets and clears assertions;
 *  - an MPI_ANY_SOURCE receive, nonblocking receive or probe on a no_any_source
 *    communicator fails with MPI_ERR_RANK, an MPI_ANY_TAG one on no_any_tag with
 *    MPI_ERR_TAG (MPI_ERRORS_RETURN on the communicator), and a receive posted before
 *    still gets its message;
 *  - under ubermatch_no_unexpected a message that arrives before its receive is kept
 *    and received (pml_ubermatch_unexpected_refused counts it, and the engine no longer
 *    relies on the assertion).
 * With pml_ubermatch_assertions ignore: pml_ubermatch_relaxed is 0 everywhere.
 */
#include "mpitest.h"

enum { MSGS = 100, TAGS = 5 };

static int ubermatch;  /* pml/ubermatch is the PML */
static int honoured;   /* and honours assertions */
static long checks;
static int split_alone; /* split_type communicators smaller than MPI_COMM_WORLD */

/* A string control variable; 0 when there is none by that name. */
static int cvar_string(const char *name, char *out, int len)
{
    int index, count;
    MPI_T_cvar_handle h;
    char buf[8192]; /* Open MPI 4.1 asks for 2048 bytes for any string */
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS)
        return 0;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS)
        return 0;
    buf[0] = '\0';
    if (count <= (int)sizeof buf && MPI_T_cvar_read(h, buf) == MPI_SUCCESS)
        snprintf(out, (size_t)len, "%s", buf);
    MPI_T_cvar_handle_free(&h);
    return 1;
}

/* pml_ubermatch_<name> of comm, a handle (a counter counts from its allocation). */
typedef struct {
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
} pvar_t;

static pvar_t pvar_open(const char *name, int cls, MPI_Comm comm)
{
    char full[128];
    int index, count;
    pvar_t p;
    snprintf(full, sizeof full, "pml_ubermatch_%s", name);
    CHECK(MPI_T_pvar_get_index(full, cls, &index) == MPI_SUCCESS, "no performance variable %s", full);
    MPI_CHECK(MPI_T_pvar_session_create(&p.s));
    MPI_CHECK(MPI_T_pvar_handle_alloc(p.s, index, &comm, &p.h, &count));
    return p;
}

static unsigned long long pvar_close(pvar_t *p)
{
    unsigned long long v = 0;
    MPI_CHECK(MPI_T_pvar_read(p->s, p->h, &v));
    MPI_CHECK(MPI_T_pvar_handle_free(p->s, &p->h));
    MPI_CHECK(MPI_T_pvar_session_free(&p->s));
    return v;
}

static unsigned long long pvar(const char *name, MPI_Comm comm)
{
    pvar_t p = pvar_open(name, MPI_T_PVAR_CLASS_GENERIC, comm);
    return pvar_close(&p);
}

static void expect_relaxed(MPI_Comm comm, unsigned long long want, const char *what)
{
    if (!ubermatch)
        return;
    if (!honoured)
        want = 0;
    unsigned long long got = pvar("relaxed", comm);
    CHECK(got == want, "%s: pml_ubermatch_relaxed %llu, expected %llu", what, got, want);
    checks++;
}

/* Receive i got buf[i] of message 1000 + i: in MPI order, or, with overtaking
 * allowed, some message of its tag, each message once (so the multiset is right). */
static void check_received(const int *buf, int any_order, const char *what)
{
    char seen[MSGS] = {0};
    for (int i = 0; i < MSGS; i++) {
        const int k = buf[i] - 1000;
        if (!any_order) {
            CHECK(k == i, "%s: receive %d got %d (MPI order broken)", what, i, buf[i]);
            continue;
        }
        CHECK(k >= 0 && k < MSGS && k % TAGS == i % TAGS && !seen[k],
              "%s: receive %d (tag %d) got %d: not a message of its tag, or one received twice",
              what, i, i % TAGS, buf[i]);
        seen[k] = 1;
    }
}

/* MSGS messages 1 -> 0 with tags i % TAGS, receives posted first (so none is
 * unexpected; unexpected_first: sent first, so most are), then an allreduce on comm. */
static void traffic_of(MPI_Comm comm, int any_order, int unexpected_first, const char *what)
{
    int buf[MSGS], sum = 0, one = 1;
    MPI_Request r[MSGS];
    if (mt_rank == 0 && !unexpected_first) {
        for (int i = 0; i < MSGS; i++)
            MPI_CHECK(MPI_Irecv(&buf[i], 1, MPI_INT, 1, i % TAGS, comm, &r[i]));
    }
    if (!unexpected_first)
        MPI_CHECK(MPI_Barrier(comm));
    if (mt_rank == 1) {
        for (int i = 0; i < MSGS; i++)
            buf[i] = 1000 + i;
        for (int i = 0; i < MSGS; i++)
            MPI_CHECK(MPI_Isend(&buf[i], 1, MPI_INT, 0, i % TAGS, comm, &r[i]));
    }
    if (unexpected_first) {
        MPI_CHECK(MPI_Barrier(comm));
        if (mt_rank == 0) {
            for (int i = 0; i < MSGS; i++)
                MPI_CHECK(MPI_Irecv(&buf[i], 1, MPI_INT, 1, i % TAGS, comm, &r[i]));
        }
    }
    if (mt_rank <= 1)
        MPI_CHECK(MPI_Waitall(MSGS, r, MPI_STATUSES_IGNORE));
    if (mt_rank == 0)
        check_received(buf, any_order, what);
    MPI_CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == mt_size, "%s: allreduce %d", what, sum);
    checks++;
}

static void traffic(MPI_Comm comm, const char *what) { traffic_of(comm, 0, 0, what); }

static void expect_error(int rc, int cls_want, const char *call)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s succeeded on a communicator whose assertion rules it out", call);
    MPI_Error_class(rc, &cls);
    CHECK(cls == cls_want, "%s: error class %d, expected %d", call, cls, cls_want);
    checks++;
}

/* Wildcards the assertions rule out fail; a receive posted before survives. */
static void misuse(MPI_Comm comm, int no_src, int no_tag, const char *what)
{
    int v = 0, w = 0, u = 0, flag = 0;
    MPI_Request keep, r, started = MPI_REQUEST_NULL;
    if (!(ubermatch && honoured) || !(no_src || no_tag))
        return;
    if (mt_rank == 0) {
        MPI_CHECK(MPI_Irecv(&v, 1, MPI_INT, 1, 7, comm, &keep));
        if (no_src) {
            expect_error(MPI_Recv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, MPI_STATUS_IGNORE),
                         MPI_ERR_RANK, "MPI_Recv(MPI_ANY_SOURCE)");
            expect_error(MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &r), MPI_ERR_RANK,
                         "MPI_Irecv(MPI_ANY_SOURCE)");
            expect_error(MPI_Iprobe(MPI_ANY_SOURCE, 7, comm, &flag, MPI_STATUS_IGNORE),
                         MPI_ERR_RANK, "MPI_Iprobe(MPI_ANY_SOURCE)");
            MPI_CHECK(MPI_Recv_init(&w, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &r));
            expect_error(MPI_Start(&r), MPI_ERR_RANK, "MPI_Start(persistent MPI_ANY_SOURCE receive)");
            MPI_CHECK(MPI_Request_free(&r));
            /* In one Startall (the PML batches a run of receives): the one
             * before the refused receive is started, those from it on are not.
             * Open MPI 4.1.4's MPI_Startall drops the PML's error code (the
             * PML's line on stderr names it), so only the requests' states
             * are checked. */
            MPI_Request run[3];
            MPI_CHECK(MPI_Recv_init(&u, 1, MPI_INT, 1, 8, comm, &run[0]));
            MPI_CHECK(MPI_Recv_init(&w, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &run[1]));
            MPI_CHECK(MPI_Recv_init(&w, 1, MPI_INT, 1, 9, comm, &run[2]));
            (void)MPI_Startall(3, run);
            for (int i = 1; i < 3; i++) { /* inactive: Test says done at once, with an empty status */
                MPI_Status st;
                MPI_CHECK(MPI_Test(&run[i], &flag, &st));
                CHECK(flag && st.MPI_TAG == MPI_ANY_TAG, "%s: receive %d of a refused Startall is left active", what, i);
                checks++;
                MPI_CHECK(MPI_Request_free(&run[i]));
            }
            started = run[0];
        }
        if (no_tag) {
            expect_error(MPI_Recv(&w, 1, MPI_INT, 1, MPI_ANY_TAG, comm, MPI_STATUS_IGNORE),
                         MPI_ERR_TAG, "MPI_Recv(MPI_ANY_TAG)");
            expect_error(MPI_Iprobe(1, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE), MPI_ERR_TAG,
                         "MPI_Iprobe(MPI_ANY_TAG)");
        }
    }
    MPI_CHECK(MPI_Barrier(comm));
    if (mt_rank == 1) {
        v = 4242;
        MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 7, comm));
        if (no_src) {
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 8, comm)); /* for the receive the Startall did start */
        }
    } else if (mt_rank == 0) {
        MPI_CHECK(MPI_Wait(&keep, MPI_STATUS_IGNORE));
        CHECK(v == 4242, "%s: the receive posted before the refused calls got %d", what, v);
        checks++;
        if (started != MPI_REQUEST_NULL) {
            MPI_CHECK(MPI_Wait(&started, MPI_STATUS_IGNORE));
            CHECK(u == 4242, "%s: the receive a refused Startall started got %d", what, u);
            MPI_CHECK(MPI_Request_free(&started));
            checks++;
        }
    }
}

/* A message before its receive, under ubermatch_no_unexpected: kept. */
static void unexpected_arrival(MPI_Comm comm, unsigned long long relaxed, const char *what)
{
    int v = 0, flag = 0;
    pvar_t refused;
    if (ubermatch && mt_rank == 0)
        refused = pvar_open("unexpected_refused", MPI_T_PVAR_CLASS_COUNTER, comm);
    MPI_CHECK(MPI_Barrier(comm));
    if (mt_rank == 1) {
        v = 77;
        MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 9, comm));
    } else if (mt_rank == 0) {
        while (!flag)
            MPI_CHECK(MPI_Iprobe(1, 9, comm, &flag, MPI_STATUS_IGNORE));
        if (ubermatch) {
            unsigned long long n = pvar_close(&refused);
            const int chosen = honoured; /* a -nounexp engine ran */
            CHECK(n == (unsigned long long)chosen,
                  "%s: pml_ubermatch_unexpected_refused %llu, expected %d", what, n, chosen);
        }
        expect_relaxed(comm, relaxed & ~4ull, what);
        MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 1, 9, comm, MPI_STATUS_IGNORE));
        CHECK(v == 77, "%s: unexpected message carried %d", what, v);
        checks++;
    }
    traffic_of(comm, (relaxed & 8) != 0, 0, what); /* and the communicator goes on */
}

int main(int argc, char **argv)
{
    static const struct {
        const char *keys; /* comma-separated, each set to "true" */
        unsigned long long relaxed;
    } cases[] = {
        {"mpi_assert_no_any_source", 1},
        {"mpi_assert_no_any_source,mpi_assert_no_any_tag", 3},
        {"mpi_assert_no_any_source,ubermatch_no_unexpected", 5},
        {"mpi_assert_no_any_source,mpi_assert_no_any_tag,ubermatch_no_unexpected", 7},
        {"mpi_assert_no_any_source,mpi_assert_no_any_tag,mpi_assert_allow_overtaking", 11},
        {"mpi_assert_no_any_source,mpi_assert_no_any_tag,mpi_assert_allow_overtaking,"
         "ubermatch_no_unexpected", 15},
        {"mpi_assert_no_any_source,mpi_assert_allow_overtaking", 9},
        {"mpi_assert_no_any_source,mpi_assert_allow_overtaking,ubermatch_no_unexpected", 13},
        {"mpi_assert_no_any_tag", 0},
        {"mpi_assert_allow_overtaking", 0},
        {"mpi_assert_exact_length", 0},
        {"ubermatch_no_unexpected", 0},
    };
    char value[256] = "";
    int provided;

    mt_init(&argc, &argv, "assertions", 2);
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    ubermatch = cvar_string("pml", value, sizeof value) && strcmp(value, "ubermatch") == 0;
    value[0] = '\0';
    honoured = !(cvar_string("pml_ubermatch_assertions", value, sizeof value) &&
                 strcmp(value, "ignore") == 0);

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char keys[256], *save = NULL;
        MPI_Info info;
        MPI_Comm comm;
        const int no_src = strstr(cases[c].keys, "no_any_source") != NULL;
        const int no_tag = strstr(cases[c].keys, "no_any_tag") != NULL;
        const int any_order = strstr(cases[c].keys, "allow_overtaking") != NULL;
        const int no_unexp = strstr(cases[c].keys, "ubermatch_no_unexpected") != NULL;
        MPI_CHECK(MPI_Info_create(&info));
        snprintf(keys, sizeof keys, "%s", cases[c].keys);
        for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save))
            MPI_CHECK(MPI_Info_set(info, k, "true"));
        for (int how = 0; how < 2; how++) {
            if (how == 0)
                MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
            else
                MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mt_rank, info, &comm));
            MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
            expect_relaxed(comm, cases[c].relaxed, cases[c].keys);
            int size;
            MPI_CHECK(MPI_Comm_size(comm, &size));
            if (size < mt_size) { /* ranks on other hosts (test/multihost): no one to talk to */
                MPI_CHECK(MPI_Comm_free(&comm));
                split_alone++;
                continue;
            }
            traffic_of(comm, any_order, 0, cases[c].keys);
            if (!no_unexp)
                traffic_of(comm, any_order, 1, cases[c].keys);
            misuse(comm, no_src, no_tag, cases[c].keys);
            if (how == 0 && (cases[c].relaxed & 4))
                unexpected_arrival(comm, cases[c].relaxed, cases[c].keys);
            MPI_CHECK(MPI_Comm_free(&comm));
        }
        MPI_CHECK(MPI_Info_free(&info));
    }

    /* MPI_Comm_set_info on a communicator made without: the engine follows at the next
     * receive once its queues are empty, and back when the assertion is cleared. */
    {
        MPI_Info info;
        MPI_Comm comm;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
        MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
        expect_relaxed(comm, 0, "dup");
        MPI_CHECK(MPI_Info_create(&info));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "true"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
        MPI_CHECK(MPI_Comm_set_info(comm, info));
        traffic(comm, "set_info no_any_source, no_any_tag");
        expect_relaxed(comm, 3, "after MPI_Comm_set_info(no_any_source, no_any_tag true)");
        misuse(comm, 1, 1, "set_info no_any_source, no_any_tag");
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "false"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "false"));
        MPI_CHECK(MPI_Comm_set_info(comm, info));
        traffic(comm, "set_info false");
        expect_relaxed(comm, 0, "after MPI_Comm_set_info(no_any_source, no_any_tag false)");
        if (mt_rank == 0) { /* a wildcard is fine again */
            int v = 0;
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, comm, MPI_STATUS_IGNORE));
            CHECK(v == 5, "ANY_SOURCE receive after the assertion was cleared got %d", v);
        } else if (mt_rank == 1) {
            int v = 5;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 3, comm));
        }
        MPI_CHECK(MPI_Info_free(&info));
        MPI_CHECK(MPI_Comm_free(&comm));
    }

    /* Assertions cleared while the relaxed engine holds a receive and two messages:
     * the wildcards are allowed at once (the queued elements move to a full engine),
     * and nothing queued is lost. */
    {
        MPI_Info info;
        MPI_Comm comm;
        MPI_Request pending = MPI_REQUEST_NULL;
        int early = 0;
        MPI_CHECK(MPI_Info_create(&info));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "true"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_allow_overtaking", "true"));
        MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
        MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
        expect_relaxed(comm, 11, "dup_with_info(no_any_source, no_any_tag, allow_overtaking)");
        if (mt_rank == 0) {
            MPI_CHECK(MPI_Irecv(&early, 1, MPI_INT, 1, 5, comm, &pending));
        } else if (mt_rank == 1) {
            for (int v = 1; v <= 2; ++v)
                MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 7, comm)); /* unexpected at rank 0 */
        }
        MPI_CHECK(MPI_Barrier(comm));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "false"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "false"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_allow_overtaking", "false"));
        MPI_CHECK(MPI_Comm_set_info(comm, info));
        if (mt_rank == 0) {
            int got[2] = {0, 0};
            MPI_Status st;
            for (int i = 0; i < 2; ++i) {
                MPI_CHECK(MPI_Recv(&got[i], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
                CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 7, "wildcard receive %d after the assertions "
                      "were cleared with traffic queued: source %d tag %d", i, st.MPI_SOURCE, st.MPI_TAG);
            }
            CHECK(got[0] + got[1] == 3 && got[0] * got[1] == 2, "the two queued messages: got %d and %d",
                  got[0], got[1]);
            expect_relaxed(comm, 0, "after MPI_Comm_set_info(all false) with traffic queued");
        }
        MPI_CHECK(MPI_Barrier(comm));
        if (mt_rank == 1) {
            int v = 9;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 5, comm));
        } else if (mt_rank == 0) {
            MPI_CHECK(MPI_Wait(&pending, MPI_STATUS_IGNORE));
            CHECK(early == 9, "the receive posted before the assertions were cleared got %d", early);
        }
        MPI_CHECK(MPI_Info_free(&info));
        MPI_CHECK(MPI_Comm_free(&comm));
    }

    /* ubermatch_no_unexpected added and no_any_tag taken back with a message queued:
     * the message arrived before the assertion, so the communicator takes the engine
     * without it, and an ANY_TAG receive (allowed again) gets the message. */
    {
        MPI_Info info;
        MPI_Comm comm;
        MPI_CHECK(MPI_Info_create(&info));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_source", "true"));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
        MPI_CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
        MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
        if (mt_rank == 1) {
            int v = 4;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 7, comm)); /* unexpected at rank 0 */
        }
        MPI_CHECK(MPI_Barrier(comm));
        MPI_CHECK(MPI_Info_set(info, "mpi_assert_no_any_tag", "false"));
        MPI_CHECK(MPI_Info_set(info, "ubermatch_no_unexpected", "true"));
        MPI_CHECK(MPI_Comm_set_info(comm, info));
        if (mt_rank == 0) {
            int v = 0;
            MPI_Status st;
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, comm, &st));
            CHECK(v == 4 && st.MPI_TAG == 7, "ANY_TAG receive after no_any_tag was taken back and "
                  "ubermatch_no_unexpected added with a message queued: %d, tag %d", v, st.MPI_TAG);
            expect_relaxed(comm, 1, "after set_info(no_any_tag false, ubermatch_no_unexpected true) "
                           "with a message queued");
        }
        MPI_CHECK(MPI_Info_free(&info));
        MPI_CHECK(MPI_Comm_free(&comm));
    }

    MPI_CHECK(MPI_T_finalize());
    return mt_finish("%zu assertion sets, dup_with_info and split_type%s, set_info; %ld checks%s",
                     sizeof cases / sizeof cases[0],
                     split_alone ? " (split_type: ranks on several hosts, no traffic)" : "", checks,
                     ubermatch ? (!honoured ? ", pml_ubermatch_assertions ignore"
                                            : ", ubermatch engines and errors checked")
                               : ", not pml/ubermatch: its checks skipped");
}

/* spawn: point-to-point between a job and the job it starts with
 * MPI_Comm_spawn, >= 1 rank (the parents), 2 children.
 *
 * Not among the MPI tests run under every backend (spawning on the
 * multi-host test's namespaces is not this test's point): replay/test-replay.sh
 * runs it with pml_ubermatch_trace, where both jobs' ranks count from 0 and
 * must write files of their own. Checked:
 *  - parent rank 0 sends ROUNDS messages to each child over the
 *    intercommunicator (tags cycling over 3), the children receive them with
 *    MPI_ANY_TAG in order, and pass each on to each other in their own
 *    MPI_COMM_WORLD;
 *  - each child sends the parent back the sum of what it received from the
 *    parent and from its sibling, which rank 0 checks;
 *  - MPI_Comm_disconnect on both sides.
 */
#include "mpitest.h"

#define ROUNDS 500
#define CHILDREN 2

static long expected_sum(void)
{
    long s = 0;
    for (int i = 0; i < ROUNDS; ++i)
        s += 2L * i; /* one from the parent, the same value from the sibling */
    return s;
}

static void child(MPI_Comm parent)
{
    long sum = 0;
    for (int i = 0; i < ROUNDS; ++i) {
        int v = -1, w = -1;
        MPI_Status st;
        MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 0, MPI_ANY_TAG, parent, &st));
        CHECK(v == i && st.MPI_TAG == i % 3, "child %d: message %d from the parent: %d, tag %d", mt_rank, i, v,
              st.MPI_TAG);
        MPI_CHECK(MPI_Sendrecv(&v, 1, MPI_INT, 1 - mt_rank, 7, &w, 1, MPI_INT, 1 - mt_rank, 7, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK(w == i, "child %d: message %d from its sibling: %d", mt_rank, i, w);
        sum += v + w;
    }
    MPI_CHECK(MPI_Send(&sum, 1, MPI_LONG, 0, 9, parent));
    MPI_CHECK(MPI_Comm_disconnect(&parent));
    alarm(0);
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "spawn", 1);
    MPI_Comm parent;
    MPI_CHECK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        CHECK(mt_size == CHILDREN, "the job spawned has %d ranks, %d asked for", mt_size, CHILDREN);
        child(parent);
        return 0;
    }
    MPI_Comm inter;
    int errcodes[CHILDREN];
    MPI_CHECK(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, CHILDREN, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errcodes));
    for (int c = 0; c < CHILDREN; ++c)
        CHECK(errcodes[c] == MPI_SUCCESS, "child %d: spawn error %d", c, errcodes[c]);
    int remote = 0;
    MPI_CHECK(MPI_Comm_remote_size(inter, &remote));
    CHECK(remote == CHILDREN, "intercommunicator to the children: remote size %d", remote);
    long checked = 0;
    if (mt_rank == 0) {
        for (int i = 0; i < ROUNDS; ++i)
            for (int c = 0; c < CHILDREN; ++c)
                MPI_CHECK(MPI_Send(&i, 1, MPI_INT, c, i % 3, inter));
        for (int c = 0; c < CHILDREN; ++c) {
            long sum = -1;
            MPI_CHECK(MPI_Recv(&sum, 1, MPI_LONG, c, 9, inter, MPI_STATUS_IGNORE));
            CHECK(sum == expected_sum(), "child %d's sum: %ld, expected %ld", c, sum, expected_sum());
            checked++;
        }
    }
    MPI_CHECK(MPI_Comm_disconnect(&inter));
    return mt_finish("%d children spawned, %d messages to each, %ld sums checked", CHILDREN, ROUNDS, checked);
}

/* MPI RMA (osc rides on the PML for osc/pt2pt): Put/Get/Accumulate/Get_accumulate/
 * Fetch_and_op/Compare_and_swap under fence, lock/unlock, lock_all/flush and PSCW;
 * then many fence epochs, over which the PML's requests must not grow (osc/pt2pt
 * frees its receives' requests in their completion callbacks). */
#include "mpitest.h"

enum { N = 1024 };

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "rma", 3);
    int size = mt_size, rank = mt_rank, right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *mem;
    MPI_Win win;
    MPI_CHECK(MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 2 * N; i++) mem[i] = -1;
    int src[N], got[N];
    for (int i = 0; i < N; i++) src[i] = rank * N + i;

    /* fence: Put to the right, Get it back, Accumulate */
    MPI_CHECK(MPI_Win_fence(0, win));
    MPI_CHECK(MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win));
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) CHECK(mem[i] == left * N + i, "fence Put: mem[%d] = %d", i, mem[i]);
    MPI_CHECK(MPI_Get(got, N, MPI_INT, right, 0, N, MPI_INT, win));
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++) CHECK(got[i] == rank * N + i, "fence Get: got[%d] = %d", i, got[i]);
    for (int i = 0; i < N; i++) mem[N + i] = 0;
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int t = 0; t < size; t++)
        MPI_CHECK(MPI_Accumulate(src, N, MPI_INT, t, N, N, MPI_INT, MPI_SUM, win));
    MPI_CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < N; i++) {
        int want = 0;
        for (int r = 0; r < size; r++) want += r * N + i;
        CHECK(mem[N + i] == want, "Accumulate: mem[%d] = %d, want %d", N + i, mem[N + i], want);
    }

    /* exclusive lock: every rank increments a counter at rank 0 with Fetch_and_op */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) mem[0] = 0;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    int one = 1, old = -1, seen = 0;
    for (int k = 0; k < 20; k++) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, win));
        MPI_CHECK(MPI_Win_unlock(0, win));
        CHECK(old >= seen, "Fetch_and_op went backwards: %d after %d", old, seen);
        seen = old;
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) CHECK(mem[0] == 20 * size, "lock counter %d, want %d", mem[0], 20 * size);

    /* lock_all + flush: Put then Get of the same location sees the Put; Compare_and_swap */
    MPI_CHECK(MPI_Win_lock_all(0, win));
    int mine = 1000 + rank, back = -1;
    MPI_CHECK(MPI_Put(&mine, 1, MPI_INT, right, 1 + rank, 1, MPI_INT, win));
    MPI_CHECK(MPI_Win_flush(right, win));
    MPI_CHECK(MPI_Get(&back, 1, MPI_INT, right, 1 + rank, 1, MPI_INT, win));
    MPI_CHECK(MPI_Win_flush_all(win));
    CHECK(back == mine, "flush: read %d after writing %d", back, mine);
    int cmp = mine, repl = -7, prev = 0;
    MPI_CHECK(MPI_Compare_and_swap(&repl, &cmp, &prev, MPI_INT, right, 1 + rank, win));
    MPI_CHECK(MPI_Win_unlock_all(win));
    CHECK(prev == mine, "Compare_and_swap saw %d", prev);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(mem[1 + left] == -7, "Compare_and_swap did not swap: %d", mem[1 + left]);

    /* PSCW: each rank exposes to its left and accesses its right */
    MPI_Group world, gl, gr;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_incl(world, 1, &left, &gl));
    MPI_CHECK(MPI_Group_incl(world, 1, &right, &gr));
    MPI_CHECK(MPI_Win_post(gl, 0, win));
    MPI_CHECK(MPI_Win_start(gr, 0, win));
    MPI_CHECK(MPI_Put(src, N, MPI_INT, right, N, N, MPI_INT, win));
    int fetched = 0;
    MPI_CHECK(MPI_Get_accumulate(&one, 1, MPI_INT, &fetched, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win));
    MPI_CHECK(MPI_Win_complete(win));
    MPI_CHECK(MPI_Win_wait(win));
    for (int i = 0; i < N; i++) CHECK(mem[N + i] == left * N + i, "PSCW Put: mem[%d] = %d", N + i, mem[N + i]);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) CHECK(mem[0] == 20 * size + 1, "Get_accumulate: %d", mem[0]);
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&world);

    /* EPOCHS fence epochs of one Put of N integers each: osc/pt2pt's requests freed before they
     * completed must come back (before 2026-11-29 about one a epoch did not). */
    enum { EPOCHS = 600 };
    int provided;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    const long long before = mt_pml_requests();
    for (int e = 0; e < EPOCHS; e++) {
        MPI_CHECK(MPI_Win_fence(0, win));
        MPI_CHECK(MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win));
    }
    MPI_CHECK(MPI_Win_fence(0, win));
    const long long after = mt_pml_requests();
    MPI_CHECK(MPI_T_finalize());
    CHECK(after - before <= 128, "requests grew from %lld to %lld over %d fence epochs (freed ones lost?)",
          before, after, EPOCHS);
    for (int i = 0; i < N; i++) CHECK(mem[i] == left * N + i, "fence epochs' Put: mem[%d] = %d", i, mem[i]);
    MPI_CHECK(MPI_Win_free(&win));
    return mt_finish("Put/Get/Accumulate/Fetch_and_op/CAS/Get_accumulate under fence, lock, lock_all+flush, PSCW");
}

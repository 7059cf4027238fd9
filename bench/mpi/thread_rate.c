/* thread_rate: multithreaded message rate under MPI_THREAD_MULTIPLE (the
 * shape of Dosanjh et al.'s Fig. 8, seed 002): 2 ranks, T threads each.
 * Thread t of rank 1 posts a window of W receives (tag t) and waits for
 * them while thread t of rank 0 sends W 8-byte messages; then one 0-byte
 * reply, so that the next window's messages find their receives posted
 * or not depending on who is faster, as in an application. Before
 * timing, every receiving thread posts `depth` receives of a tag never sent
 * (on the same communicator), which every arrival searches past in a list
 * engine; they are cancelled at the end. Threads of one rank therefore post
 * receives while other threads' messages are being matched.
 *
 * usage: mpirun -np 2 thread_rate [--threads T] [--depth N] [--window W]
 *                                 [--iters I] [--reps R]
 * Prints one line per repetition and a last line with the median:
 *   threads=T depth=N window=W rate=<messages/s> (median of R)
 * Exit 1 on a wrong message (source, tag, count or content).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64
#define NEVER_TAG 30000

static int rank, nthreads = 2, depth = 0, window = 64, iters = 2000, reps = 5;
static MPI_Comm comm;
static pthread_barrier_t barrier;
static double t_start, t_end[MAX_THREADS];

static void die(const char *what)
{
    fprintf(stderr, "thread_rate: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *worker(void *p)
{
    const int t = (int)(intptr_t)p;
    uint64_t *buf = calloc((size_t)window, sizeof *buf);
    MPI_Request *req = malloc((size_t)window * sizeof *req);
    MPI_Status *st = malloc((size_t)window * sizeof *st);
    if (buf == NULL || req == NULL || st == NULL)
        die("out of memory");
    pthread_barrier_wait(&barrier); /* the main thread starts the clock */
    for (int it = 0; it < iters; it++) {
        if (rank == 0) {
            for (int i = 0; i < window; i++) {
                buf[i] = ((uint64_t)t << 32) | (uint64_t)(it * window + i);
                MPI_Isend(&buf[i], 1, MPI_UINT64_T, 1, t, comm, &req[i]);
            }
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, t, comm, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < window; i++)
                MPI_Irecv(&buf[i], 1, MPI_UINT64_T, 0, t, comm, &req[i]);
            MPI_Waitall(window, req, st);
            for (int i = 0; i < window; i++) {
                int n = -1;
                MPI_Get_count(&st[i], MPI_UINT64_T, &n);
                /* one thread's receives of one source and tag: MPI's order */
                if (st[i].MPI_SOURCE != 0 || st[i].MPI_TAG != t || n != 1 ||
                    buf[i] != (((uint64_t)t << 32) | (uint64_t)(it * window + i)))
                    die("wrong message (order, source, tag or content)");
            }
            MPI_Send(NULL, 0, MPI_BYTE, 0, t, comm);
        }
    }
    t_end[t] = MPI_Wtime();
    free(buf);
    free(req);
    free(st);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        int *v = !strcmp(argv[i], "--threads") ? &nthreads
                 : !strcmp(argv[i], "--depth") ? &depth
                 : !strcmp(argv[i], "--window") ? &window
                 : !strcmp(argv[i], "--iters") ? &iters
                 : !strcmp(argv[i], "--reps") ? &reps
                                              : NULL;
        if (v == NULL || i + 1 >= argc || (*v = atoi(argv[++i])) < 0) {
            if (rank == 0)
                fprintf(stderr, "usage: thread_rate [--threads 1..%d] [--depth N] [--window W >= 1] "
                                "[--iters I >= 1] [--reps R >= 1]\n", MAX_THREADS);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (provided < MPI_THREAD_MULTIPLE || size != 2 || nthreads < 1 || nthreads > MAX_THREADS ||
        window < 1 || iters < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "thread_rate: needs MPI_THREAD_MULTIPLE (got %d), 2 ranks (got %d), "
                            "1..%d threads, window, iters and reps >= 1\n",
                    provided, size, MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);

    MPI_Request *never = malloc((size_t)(depth > 0 ? depth : 1) * nthreads * sizeof *never);
    int never_buf;
    if (never == NULL)
        die("out of memory");
    if (rank == 1)
        for (int i = 0; i < depth * nthreads; i++)
            MPI_Irecv(&never_buf, 1, MPI_INT, 0, NEVER_TAG, comm, &never[i]);

    double *rates = malloc((size_t)reps * sizeof *rates);
    pthread_t th[MAX_THREADS];
    if (rates == NULL)
        die("out of memory");
    for (int r = 0; r < reps; r++) {
        pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
        for (int t = 0; t < nthreads; t++)
            if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0)
                die("pthread_create failed");
        MPI_Barrier(MPI_COMM_WORLD);
        t_start = MPI_Wtime();
        pthread_barrier_wait(&barrier);
        double last = 0;
        for (int t = 0; t < nthreads; t++) {
            pthread_join(th[t], NULL);
            if (t_end[t] > last)
                last = t_end[t];
        }
        pthread_barrier_destroy(&barrier);
        rates[r] = (double)nthreads * window * iters / (last - t_start);
        if (rank == 1)
            printf("rep %d: threads=%d depth=%d window=%d rate=%.0f\n", r, nthreads, depth, window, rates[r]);
    }
    if (rank == 1) {
        for (int i = 0; i < depth * nthreads; i++) {
            MPI_Cancel(&never[i]);
            MPI_Wait(&never[i], MPI_STATUS_IGNORE);
        }
        qsort(rates, (size_t)reps, sizeof *rates, cmp_double);
        printf("threads=%d depth=%d window=%d rate=%.0f (median of %d)\n", nthreads, depth, window,
               rates[reps / 2], reps);
        fflush(stdout);
    }
    free(rates);
    free(never);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}

/*
 * radix: a parallel LSD radix sort, the queue behaviour of the Radix
 * application in Ghazimirsaeed et al. (ParCo 2019, Fig. 1(a), 7(a-b)): almost
 * every queue element comes from collectives, and lists are short.
 *
 *   mpirun -np N radix [--size KEYS_PER_RANK] [--iters SORTS] [--stats]
 *
 * Each sort orders N * size 32-bit keys, size per rank, in four passes of one
 * 8-bit digit. A pass: the local histogram, MPI_Allreduce of the histograms
 * (global digit counts), MPI_Allgather of them (where each rank's keys of a
 * digit start), MPI_Reduce_scatter_block of the per-destination counts (how
 * many keys each rank receives, checked against what the histograms say), and
 * MPI_Alltoallv of (destination index, key) pairs. After a sort: every rank's
 * keys in order, MPI_Sendrecv of the first key to the left neighbour (the only
 * point-to-point traffic: boundaries in order), and MPI_Reduce of the key count,
 * sum and sum of hashes to rank 0, which must equal those of the unsorted keys.
 */
#include "examples/proxies/proxy.h"

enum { DIGIT_BITS = 8, BUCKETS = 1 << DIGIT_BITS, PASSES = 32 / DIGIT_BITS };

typedef struct totals {
    unsigned long long count, sum, hashes; /* sum of hash(key): changes with any key */
} totals_t;

static totals_t totals_of(const uint32_t *keys, long n)
{
    totals_t t = {(unsigned long long) n, 0, 0};
    for (long i = 0; i < n; ++i) {
        t.sum += keys[i];
        t.hashes += proxy_hash(keys[i]);
    }
    return t;
}

/* One pass on `digit`: keys move to their global position (rank = index / n). */
static void pass(const proxy_t *p, uint32_t *keys, uint64_t *send, uint64_t *recv, int digit,
                 int *all, int *scounts, int *sdispls, int *rcounts, int *rdispls)
{
    const long n = p->size;
    const int shift = digit * DIGIT_BITS;
    int hist[BUCKETS] = {0}, total[BUCKETS];
    long base[BUCKETS];     /* global index of this rank's first key of each digit */
    long next[BUCKETS];
    int expect_in = 0, got_in = 0;

    for (long i = 0; i < n; ++i) {
        ++hist[(keys[i] >> shift) & (BUCKETS - 1)];
    }
    MPI_Allreduce(hist, total, BUCKETS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allgather(hist, BUCKETS, MPI_INT, all, BUCKETS, MPI_INT, MPI_COMM_WORLD);

    /* Global index where digit d of rank r starts: keys of smaller digits, then
     * those of digit d on lower ranks. Also how many keys arrive from each rank. */
    long start = 0;
    for (int r = 0; r < p->np; ++r) {
        rcounts[r] = 0;
    }
    for (int d = 0; d < BUCKETS; ++d) {
        long at = start;
        for (int r = 0; r < p->np; ++r) {
            const long c = all[r * BUCKETS + d];
            if (r == p->rank) {
                base[d] = at;
            }
            /* [at, at + c) intersected with this rank's [rank * n, rank * n + n) */
            const long lo = at > p->rank * n ? at : p->rank * n;
            const long hi = at + c < (p->rank + 1) * n ? at + c : (p->rank + 1) * n;
            if (hi > lo) {
                rcounts[r] += (int) (hi - lo);
            }
            at += c;
        }
        start += total[d];
    }
    PROXY_CHECK(p, start == n * p->np, "pass %d: %ld keys in all, expected %ld", digit, start,
                n * p->np);

    /* Keys in digit order (stable): destinations never decrease. */
    for (int r = 0; r < p->np; ++r) {
        scounts[r] = 0;
    }
    memcpy(next, base, sizeof(next));
    {
        long off[BUCKETS];
        long at = 0;
        for (int d = 0; d < BUCKETS; ++d) {
            off[d] = at;
            at += hist[d];
        }
        for (long i = 0; i < n; ++i) {
            const int d = (int) ((keys[i] >> shift) & (BUCKETS - 1));
            const long g = next[d]++;
            send[off[d]++] = (uint64_t) g << 32 | keys[i];
            ++scounts[g / n];
        }
    }
    sdispls[0] = rdispls[0] = 0;
    for (int r = 1; r < p->np; ++r) {
        sdispls[r] = sdispls[r - 1] + scounts[r - 1];
        rdispls[r] = rdispls[r - 1] + rcounts[r - 1];
    }
    for (int r = 0; r < p->np; ++r) {
        expect_in += rcounts[r];
    }
    MPI_Reduce_scatter_block(scounts, &got_in, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PROXY_CHECK(p, got_in == n && expect_in == n, "pass %d: receiving %d keys (histograms: %d), not %ld",
                digit, got_in, expect_in, n);
    MPI_Alltoallv(send, scounts, sdispls, MPI_UINT64_T, recv, rcounts, rdispls, MPI_UINT64_T,
                  MPI_COMM_WORLD);
    for (long i = 0; i < n; ++i) {
        const long g = (long) (recv[i] >> 32) - p->rank * n;
        PROXY_CHECK(p, g >= 0 && g < n, "pass %d: key for index %ld is not mine", digit, g + p->rank * n);
        keys[g] = (uint32_t) recv[i];
    }
}

int main(int argc, char **argv)
{
    proxy_t p;
    proxy_init(&p, "radix", argc, argv, 2048, 3, "keys per rank");
    const long n = p.size;
    uint32_t *keys = malloc(sizeof(uint32_t) * (size_t) n);
    uint64_t *send = malloc(sizeof(uint64_t) * (size_t) n);
    uint64_t *recv = malloc(sizeof(uint64_t) * (size_t) n);
    int *all = malloc(sizeof(int) * BUCKETS * (size_t) p.np);
    int *counts = malloc(sizeof(int) * 4 * (size_t) p.np);
    double checksum = 0;
    PROXY_CHECK(&p, keys && send && recv && all && counts, "out of memory");

    for (long it = 0; it < p.iters; ++it) {
        totals_t before, after, sum_before, sum_after;
        for (long i = 0; i < n; ++i) {
            keys[i] = (uint32_t) proxy_hash(((uint64_t) it << 40) ^ ((uint64_t) p.rank << 24) ^ (uint64_t) i);
        }
        before = totals_of(keys, n);
        for (int d = 0; d < PASSES; ++d) {
            pass(&p, keys, send, recv, d, all, counts, counts + p.np, counts + 2 * p.np,
                 counts + 3 * p.np);
        }
        for (long i = 1; i < n; ++i) {
            PROXY_CHECK(&p, keys[i - 1] <= keys[i], "sort %ld: keys %ld and %ld out of order", it,
                        i - 1, i);
        }
        {
            /* My last key must not exceed my right neighbour's first. */
            uint32_t right_first = UINT32_MAX;
            const int left = p.rank > 0 ? p.rank - 1 : MPI_PROC_NULL;
            const int right = p.rank + 1 < p.np ? p.rank + 1 : MPI_PROC_NULL;
            MPI_Sendrecv(&keys[0], 1, MPI_UINT32_T, left, 7, &right_first, 1, MPI_UINT32_T, right,
                         7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            PROXY_CHECK(&p, keys[n - 1] <= right_first, "sort %ld: last key %u above rank %d's first %u",
                        it, keys[n - 1], right, right_first);
        }
        after = totals_of(keys, n);
        MPI_Reduce(&before, &sum_before, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&after, &sum_after, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == p.rank) {
            PROXY_CHECK(&p,
                        sum_before.count == sum_after.count && sum_before.sum == sum_after.sum &&
                            sum_before.hashes == sum_after.hashes,
                        "sort %ld: keys lost or changed (count %llu -> %llu, sum %llu -> %llu)", it,
                        sum_before.count, sum_after.count, sum_before.sum, sum_after.sum);
            checksum += (double) sum_after.sum;
        }
    }
    free(keys);
    free(send);
    free(recv);
    free(all);
    free(counts);
    return proxy_finish(&p, checksum);
}

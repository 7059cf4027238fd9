/* bigmsg: message sizes from 0 B to past 2 GiB, 2 ranks.
 *
 * Counts are ints, so sizes past 2^31 bytes use a derived type: a contiguous
 * type of 1 MiB, 2100 of them (2.05 GiB, over INT_MAX bytes). Rank 0 sends 0 B,
 * 1 B, INT_MAX bytes (the largest int count of MPI_BYTE) and 2100 MiB; rank 1
 * receives each into a buffer of the right size and checks every 4 KiB page's
 * first and last 8 bytes against the pattern, and MPI_Get_count/_elements_x.
 * Needs about 2 x 2.1 GB of memory; BIGMSG_SKIP_HUGE=1 leaves the 2 GiB cases
 * out (machines without the memory).
 */
#include "mpitest.h"

#define MIB (1024L * 1024L)

static void fill(unsigned char *b, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i += 4096) {
        size_t end = i + 4096 < n ? i + 4096 : n;
        for (size_t j = i; j < i + 8 && j < end; j++)
            b[j] = (unsigned char)(j * 31 + salt);
        for (size_t j = end >= 8 && end - 8 > i ? end - 8 : i; j < end; j++)
            b[j] = (unsigned char)(j * 31 + salt);
    }
}

static long check(const unsigned char *b, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i += 4096) {
        size_t end = i + 4096 < n ? i + 4096 : n;
        for (size_t j = i; j < i + 8 && j < end; j++)
            if (b[j] != (unsigned char)(j * 31 + salt))
                return (long)j;
        for (size_t j = end >= 8 && end - 8 > i ? end - 8 : i; j < end; j++)
            if (b[j] != (unsigned char)(j * 31 + salt))
                return (long)j;
    }
    return -1;
}

int main(int argc, char **argv)
{
    MPI_Datatype mib;
    int huge = getenv("BIGMSG_SKIP_HUGE") == NULL;
    const long chunks = 2100; /* 2100 MiB > 2^31 bytes */
    size_t sizes[4] = {0, 1, (size_t)INT32_MAX, (size_t)chunks * MIB};
    int n = huge ? 4 : 2;
    unsigned char *buf;
    mt_init(&argc, &argv, "bigmsg", 2);
    MPI_CHECK(MPI_Type_contiguous((int)MIB, MPI_BYTE, &mib));
    MPI_CHECK(MPI_Type_commit(&mib));
    buf = malloc(huge ? sizes[3] : 16);
    CHECK(buf != NULL, "no memory for %zu bytes (set BIGMSG_SKIP_HUGE=1)", huge ? sizes[3] : (size_t)16);
    for (int k = 0; k < n; k++) {
        size_t bytes = sizes[k];
        int use_type = bytes > (size_t)INT32_MAX;
        int count = use_type ? (int)chunks : (int)bytes;
        MPI_Datatype t = use_type ? mib : MPI_BYTE;
        if (mt_rank == 0) {
            fill(buf, bytes, (unsigned)k);
            MPI_CHECK(MPI_Send(buf, count, t, 1, k, MPI_COMM_WORLD));
        } else if (mt_rank == 1) {
            MPI_Status st;
            MPI_Count elems = -1;
            int got = -1;
            memset(buf, 0, bytes < 16 ? 16 : bytes);
            MPI_CHECK(MPI_Recv(buf, count, t, 0, k, MPI_COMM_WORLD, &st));
            MPI_CHECK(MPI_Get_count(&st, t, &got));
            MPI_CHECK(MPI_Get_elements_x(&st, MPI_BYTE, &elems));
            CHECK(got == count, "%zu bytes: MPI_Get_count %d, expected %d", bytes, got, count);
            CHECK((size_t)elems == bytes, "%zu bytes: MPI_Get_elements_x %lld", bytes, (long long)elems);
            CHECK(check(buf, bytes, (unsigned)k) < 0, "%zu bytes: data differs at byte %ld", bytes,
                  check(buf, bytes, (unsigned)k));
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    free(buf);
    MPI_CHECK(MPI_Type_free(&mib));
    return mt_finish("0 B, 1 B%s checked", huge ? ", 2^31-1 B and 2100 MiB (a 1 MiB type x 2100)" : "");
}

/* The active-message test programs' check: a condition that does not hold names
 * the rank (the including file's `rank`), the file and line, and ends the job. */
#ifndef TEST_CHECK_H
#define TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#endif

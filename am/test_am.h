/* What the active-message tests share (test_am.c, test_amv.c). */
#ifndef TEST_AM_H
#define TEST_AM_H
#include "mpix_am.h"
#include "test_check.h"
#include <stdio.h>
#include <string.h>

/* the window: [0] AM element count, [1] accumulate target, then PER_RANK keys of KEY bytes */
enum { KEY = 16, PER_RANK = 64 };
extern int rank, size;

static inline void key_of(int owner, int i, char *k)
{
    memset(k, 0, KEY);
    snprintf(k, KEY, "k%d-%d", owner, i * 3);
}

/* The MPIX_Amv tests (test_amv.c): on win (the keys above) and windows of their own over mem. */
void test_amv(int *mem, MPI_Win win, MPIX_Am_op op_search, MPIX_Am_op op_touch);
#endif

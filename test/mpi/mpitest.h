/* Shared helpers for the MPI-level tests in test/mpi/ (plain MPI C, any PML).
 *
 * Every test:
 *   - calls mt_init()/mt_init_thread() first: MPI_Init, MPI_ERRORS_RETURN on
 *     MPI_COMM_WORLD (so a failing MPI call is reported by MPI_CHECK with the
 *     call's text instead of the default fatal handler), and a watchdog alarm
 *     that turns a hang into a one-line failure;
 *   - reports a failure with FAIL()/CHECK()/MPI_CHECK(): one line
 *     "FAIL <test>: rank <r>: <reason> (<file>:<line>)" on stderr, then
 *     MPI_Abort(MPI_COMM_WORLD, 1), so every rank exits non-zero;
 *   - ends with mt_finish(): a barrier, then rank 0 prints
 *     "PASS <test> (<what was checked>)" and MPI_Finalize.
 *
 * Environment: MPITEST_WATCHDOG_S (default 45) seconds before the watchdog
 * fires; 0 disables it.
 */
#ifndef UBERMATCH_MPITEST_H
#define UBERMATCH_MPITEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <mpi.h>

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mt_test_name = "?";
static int mt_rank = -1;
static int mt_size = 0;

static void mt_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn, unused));
static void mt_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "FAIL %s: rank %d: %s (%s:%d)\n", mt_test_name, mt_rank, msg, file, line);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define FAIL(...) mt_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)      \
    do {                      \
        if (!(cond))          \
            FAIL(__VA_ARGS__); \
    } while (0)

static const char *mt_errstr(int rc) __attribute__((unused));
static const char *mt_errstr(int rc)
{
    static char buf[MPI_MAX_ERROR_STRING + 64];
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "unknown error");
    MPI_Error_class(rc, &cls);
    snprintf(buf, sizeof buf, "code %d class %d: %s", rc, cls, s);
    return buf;
}

/* MPI_CHECK(MPI_Send(...)): the call must return MPI_SUCCESS. */
#define MPI_CHECK(call)                                                         \
    do {                                                                        \
        int mt_rc_ = (call);                                                    \
        if (mt_rc_ != MPI_SUCCESS)                                              \
            mt_fail_at(__FILE__, __LINE__, "%s returned %s", #call, mt_errstr(mt_rc_)); \
    } while (0)

static void mt_watchdog_handler(int sig)
{
    (void)sig;
    char msg[256];
    int n = snprintf(msg, sizeof msg,
                     "FAIL %s: rank %d: watchdog: test still running after its time limit (hang?)\n",
                     mt_test_name, mt_rank);
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n);
        (void)w;
    }
    _exit(3);
}

static void mt_start_watchdog(void)
{
    const char *e = getenv("MPITEST_WATCHDOG_S");
    int secs = e ? atoi(e) : 45;
    if (secs > 0) {
        signal(SIGALRM, mt_watchdog_handler);
        alarm((unsigned)secs);
    }
}

static void mt_after_init(const char *name, int min_ranks)
{
    mt_test_name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mt_start_watchdog();
    if (mt_size < min_ranks)
        FAIL("needs at least %d ranks, got %d", min_ranks, mt_size);
}

static void mt_init_thread(int *argc, char ***argv, const char *name, int min_ranks, int required)
    __attribute__((unused));
static void mt_init_thread(int *argc, char ***argv, const char *name, int min_ranks, int required)
{
    int provided = -1;
    mt_test_name = name;
    int rc = MPI_Init_thread(argc, argv, required, &provided);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "FAIL %s: MPI_Init_thread returned %d\n", name, rc);
        exit(1);
    }
    mt_after_init(name, min_ranks);
    if (provided < required)
        FAIL("MPI_Init_thread: required thread level %d, provided only %d", required, provided);
}

static void mt_init(int *argc, char ***argv, const char *name, int min_ranks) __attribute__((unused));
static void mt_init(int *argc, char ***argv, const char *name, int min_ranks)
{
    /* MPITEST_THREAD_MULTIPLE=1: the same test under MPI_THREAD_MULTIPLE (one
     * thread still makes every call; the library's threaded paths are taken). */
    const char *e = getenv("MPITEST_THREAD_MULTIPLE");
    if (e != NULL && strcmp(e, "1") == 0) {
        mt_init_thread(argc, argv, name, min_ranks, MPI_THREAD_MULTIPLE);
        return;
    }
    mt_test_name = name;
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "FAIL %s: MPI_Init returned %d\n", name, rc);
        exit(1);
    }
    mt_after_init(name, min_ranks);
}

/* Barrier, "PASS <name> (<details>)" from rank 0, MPI_Finalize. Returns 0. */
static int mt_finish(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int mt_finish(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (mt_rank == 0) {
        printf("PASS %s (%s)\n", mt_test_name, msg);
        fflush(stdout);
    }
    alarm(0);
    MPI_Finalize();
    return 0;
}

/* ---- time ---- */

static double mt_now(void) __attribute__((unused));
static double mt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mt_sleep_ms(double ms) __attribute__((unused));
static void mt_sleep_ms(double ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000.0);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- deterministic data ---- */

static inline uint64_t mt_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

/* A seed from up to four numbers (e.g. test case, size, iteration, direction). */
static inline uint64_t mt_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mt_mix(mt_mix(mt_mix(mt_mix(a + 0x9E3779B97F4A7C15ull) ^ b) ^ c) ^ d);
}

/* Byte i of the pattern for seed. */
static inline unsigned char mt_pattern_byte(uint64_t seed, size_t i)
{
    return (unsigned char)(mt_mix(seed ^ ((uint64_t)(i >> 3) * 0x9E3779B97F4A7C15ull)) >> ((i & 7) * 8));
}

static void mt_fill(void *buf, size_t n, uint64_t seed) __attribute__((unused));
static void mt_fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = (unsigned char *)buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = mt_mix(seed ^ ((uint64_t)(i >> 3) * 0x9E3779B97F4A7C15ull));
        memcpy(p + i, &w, 8); /* little- or big-endian: mt_check uses the same word */
    }
    for (; i < n; i++)
        p[i] = mt_pattern_byte(seed, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static long mt_check(const void *buf, size_t n, uint64_t seed) __attribute__((unused));
static long mt_check(const void *buf, size_t n, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = mt_mix(seed ^ ((uint64_t)(i >> 3) * 0x9E3779B97F4A7C15ull));
        if (memcmp(p + i, &w, 8) != 0) {
            const unsigned char *q = (const unsigned char *)&w;
            for (size_t k = 0; k < 8; k++)
                if (p[i + k] != q[k])
                    return (long)(i + k);
        }
    }
    for (; i < n; i++)
        if (p[i] != mt_pattern_byte(seed, i))
            return (long)i;
    return -1;
}

/* Small deterministic random numbers (xorshift64*). */
typedef struct {
    uint64_t s;
} mt_rng;

static inline void mt_rng_init(mt_rng *r, uint64_t seed)
{
    r->s = mt_mix(seed) | 1;
}

static inline uint64_t mt_rng_next(mt_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). */
static inline uint32_t mt_rng_below(mt_rng *r, uint32_t n)
{
    return (uint32_t)((mt_rng_next(r) >> 32) % n);
}

static void *mt_malloc(size_t n) __attribute__((unused));
static void *mt_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        FAIL("out of memory allocating %zu bytes", n);
    return p;
}

/* The requests pml/ubermatch has allocated in this process (pvar
 * pml_ubermatch_requests), or -1 under another PML; between MPI_T_init_thread
 * and MPI_T_finalize. A leak shows as growth over a loop of operations. */
static long long mt_pml_requests(void) __attribute__((unused));
static long long mt_pml_requests(void)
{
    int index, count;
    unsigned long long v = 0;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_pvar_get_index("pml_ubermatch_requests", MPI_T_PVAR_CLASS_SIZE, &index) != MPI_SUCCESS)
        return -1;
    MPI_CHECK(MPI_T_pvar_session_create(&s));
    MPI_CHECK(MPI_T_pvar_handle_alloc(s, index, NULL, &h, &count));
    MPI_CHECK(MPI_T_pvar_read(s, h, &v));
    MPI_CHECK(MPI_T_pvar_handle_free(s, &h));
    MPI_CHECK(MPI_T_pvar_session_free(&s));
    return (long long)v;
}

/* MPI_Wait that fails with a message naming `what` instead of hanging when
 * the request is not complete after `secs` seconds. */
static void mt_wait_bounded(MPI_Request *req, MPI_Status *st, double secs, const char *what) __attribute__((unused));
static void mt_wait_bounded(MPI_Request *req, MPI_Status *st, double secs, const char *what)
{
    double t0 = mt_now();
    int flag = 0;
    for (;;) {
        MPI_CHECK(MPI_Test(req, &flag, st));
        if (flag)
            return;
        if (mt_now() - t0 > secs)
            FAIL("%s: request still not complete after %.0f s", what, secs);
    }
}

/* Byte count of a received message (MPI_Get_count with MPI_BYTE). */
static int mt_count_bytes(const MPI_Status *st) __attribute__((unused));
static int mt_count_bytes(const MPI_Status *st)
{
    int n = -1;
    MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &n));
    return n;
}

#endif

/*
 * ubermatch matching engine: the C interface.
 *
 * One engine instance holds the matching state of one communicator: the
 * posted-receive queue and the unexpected-message queue, in whatever shape the
 * selected backend keeps them. Requests and messages are opaque handles; the
 * engine never looks inside them. The PML's C glue calls only this header.
 *
 * Matching rules kept by every backend:
 *  - a receive (source|UM_ANY_SOURCE, tag|UM_ANY_TAG) matches a message
 *    (source, tag) when the sources are equal or the receive's is ANY, and the
 *    tags are equal or the receive's is ANY and the message tag is >= 0
 *    (negative tags carry collective traffic and never match ANY_TAG);
 *  - a receive takes the earliest-arrived matching message;
 *  - a message goes to the earliest-posted matching receive.
 */
#ifndef UBERMATCH_ENGINE_H
#define UBERMATCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wildcards, equal to Open MPI's MPI_ANY_SOURCE and MPI_ANY_TAG. A message
 * never carries tag UM_ANY_TAG. */
#define UM_ANY_SOURCE (-1)
#define UM_ANY_TAG (-1)

/* Status codes of the engine calls. */
enum um_status {
    UM_OK = 0,
    UM_ERR_SOURCE = 1,    /* source outside [0, comm_size) and not ANY */
    UM_ERR_TAG = 2,       /* a message with tag UM_ANY_TAG */
    UM_ERR_ARG = 3,       /* NULL handle or other malformed argument */
    UM_ERR_ASSERTION = 4, /* breaks the relaxed engine's assertion (a wildcard it
                             excludes, an arrival no receive awaits); nothing queued */
    UM_ERR_NOMEM = 5      /* a batch's element could not be queued for want of
                             memory (the single calls throw std::bad_alloc) */
};

/* What the PML knows about the traffic an element belongs to. */
typedef enum um_coll {
    UM_COLL_NONE = 0, /* point-to-point */
    UM_COLL_BARRIER,
    UM_COLL_BCAST,
    UM_COLL_REDUCE,
    UM_COLL_ALLREDUCE,
    UM_COLL_GATHER,
    UM_COLL_GATHERV,
    UM_COLL_SCATTER,
    UM_COLL_SCATTERV,
    UM_COLL_ALLGATHER,
    UM_COLL_ALLGATHERV,
    UM_COLL_ALLTOALL,
    UM_COLL_ALLTOALLV,
    UM_COLL_ALLTOALLW,
    UM_COLL_REDUCE_SCATTER,
    UM_COLL_REDUCE_SCATTER_BLOCK,
    UM_COLL_SCAN,
    UM_COLL_EXSCAN,
    UM_COLL_NEIGHBOR,
    UM_COLL_OTHER, /* collective traffic of an unknown operation */
    UM_COLL_COUNT
} um_coll_t;

typedef struct um_hint {
    uint16_t coll;      /* um_coll_t */
    uint16_t reserved;
    uint32_t msg_size;  /* bytes, 0 when unknown */
    uint32_t comm_size; /* processes in the communicator, 0 when unknown */
} um_hint_t;

/* The result of one matching operation. */
typedef struct um_match {
    void *handle;       /* the matched request/message, NULL when none */
    uint32_t inspected; /* queue elements compared (search depth) */
} um_match_t;

/* One element of a batch (um_engine_post_recv_batch, um_engine_arrive_batch):
 * a receive or a message, as the single calls take it. */
typedef struct um_elem {
    void *handle;
    int32_t source;
    int32_t tag;
} um_elem_t;

/* Counters of one class of traffic (point-to-point or collective). */
typedef struct um_class_stats {
    uint64_t searches;      /* post_recv, arrive, probe and mprobe calls */
    uint64_t matches;       /* of those, the ones that found an element */
    uint64_t inspected;     /* elements compared, summed */
    uint64_t max_inspected; /* the deepest single search */
    /* With um_params_t.timers (else 0): nanoseconds the searches took (matching/engine.h,
     * Timers), and of those the part in arrive, which searches the posted-receive queue;
     * the rest searched the unexpected-message queue. */
    uint64_t search_ns;
    uint64_t posted_search_ns;
} um_class_stats_t;

typedef struct um_stats {
    uint64_t posted_len;     /* receives queued now */
    uint64_t unexpected_len; /* messages queued now */
    uint64_t posted_max;     /* high-water marks */
    uint64_t unexpected_max;
    uint64_t queues;         /* queues allocated now */
    uint64_t bytes;          /* bytes held by the engine's structures */
    uint64_t cancels;        /* receives removed by cancel */
    um_class_stats_t p2p;
    um_class_stats_t coll;
    /* The SIMD backends (vector, fuzzy32, fuzzy16, fuzzy8); 0 for the others. */
    uint64_t false_positives; /* fuzzy*: fast-key hits that the full (source, tag) refuted */
    uint64_t blocks;          /* blocks of both queues now */
    uint64_t holes;           /* slots of removed elements not yet given back, both queues now */
    uint64_t compactions;     /* hole compactions so far */
    uint64_t kernel;          /* um_kernel_t in use (UM_KERNEL_NONE: not a SIMD backend) */
    uint64_t kernel_fallback; /* 1: the requested kernel needs an instruction set this CPU
                                 lacks, and `kernel` is the best one it has */
    /* auto; 0 for the others. */
    uint64_t indexed;        /* queues kept indexed now (hash + SIMD), of the four (posted and
                                unexpected, point-to-point and collective) */
    uint64_t reshapes;       /* changes of a queue between list and indexed form so far */
    uint64_t index_bytes;    /* bytes of the indices now (part of `bytes`) */
    uint64_t memory_limited; /* times max_index_bytes kept a queue a list */
    /* With um_params_t.timers (else 0): nanoseconds spent restructuring queues (pnp's
     * partner extraction, col's level creation), and timed intervals left out for passing
     * timer_cutoff_ns (matching/engine.h, Timers). */
    uint64_t overhead_ns;
    uint64_t timer_outliers;
    /* pnp, col, colpnp, col+list, list+pnp: dedicated queues of the point-to-point (PNP)
     * and collective (COL) parts, both sides; at most floor(k_p sqrt(n)) and floor(k_c
     * sqrt(n)). 0 for the others. */
    uint64_t dedicated_p2p;
    uint64_t dedicated_coll;
} um_stats_t;

/* Backend parameters. um_params_init() sets the defaults; a value out of
 * range makes um_engine_create() fail with a message giving the range. */
typedef struct um_params {
    int64_t bins; /* "bins": number of hash bins, 1 .. 1048576 (default 256) */
    /* vector, fuzzy*: the SIMD kernel, "auto" (default; NULL too), "avx512", "avx2" or
     * "scalar". Another name fails creation; one this CPU cannot run falls back to the
     * best it can (stats: kernel_fallback; um_kernel_select() gives the warning). */
    const char *kernel;
    /* vector, fuzzy*: compact a queue when more than this fraction of its slots are
     * holes, 0 .. 1 (default 0.5; 1: never). */
    double compact_threshold;
    /* pnp, colpnp, list+pnp: a queue holding theta elements gets partners, 1 .. 1048576
     * (default 100). */
    int64_t theta;
    /* col, colpnp, col+list: dedicated collective queues per communicator are at most
     * floor(k_c * sqrt(n)), 1 .. 1024 (default 8). */
    int64_t k_c;
    /* pnp, colpnp, list+pnp: dedicated partner/non-partner queues per communicator are at
     * most floor(k_p * sqrt(n)), 1 .. 1024 (default 8). */
    int64_t k_p;
    /* auto: a list whose search had to compare index_at elements is indexed (hash +
     * SIMD), 2 .. 1048576 (default 8); an indexed queue down to list_at elements goes
     * back to a list, 0 .. index_at-1 (default 4): the gap keeps a queue from changing
     * form at every operation. See also index_rent. */
    int64_t index_at;
    int64_t list_at;
    /* auto: bytes the indices of one communicator may hold, 0 .. 2^40 (default 64 MiB;
     * 0: never index). A queue whose index would pass it stays a list. */
    int64_t max_index_bytes;
    /* Every backend: time searches and restructuring (stats search_ns, overhead_ns),
     * 0 (default, no clock read) or 1. */
    int64_t timers;
    /* With timers: an interval longer than this many ns is counted in timer_outliers
     * and left out of the sums (a process descheduled inside it), 0 .. 10^12 (default
     * 0: keep all). */
    int64_t timer_cutoff_ns;
    /* auto: a list is indexed only once its searches of index_at compares or more have
     * compared index_rent times its length since it was last list_at long, 0 .. 1048576
     * (0: at the first such search); higher keeps a queue that fills and drains with few
     * deep searches between from building an index each time. -1 (default): each queue
     * learns it: 0 while its indices pay off, rising from 4 to 64 while they do not. */
    int64_t index_rent;
} um_params_t;

typedef struct um_engine um_engine_t;

void um_params_init(um_params_t *params);
/* Checks every parameter, whatever backend uses it (um_engine_create() checks
 * only its backend's): UM_OK, or UM_ERR_ARG with a message giving the range. */
int um_params_check(const um_params_t *params, char *err, size_t errlen);

/* Creates the engine of one communicator of comm_size processes. On failure
 * returns NULL and writes a message naming the valid choices into err. */
um_engine_t *um_engine_create(const char *backend, int32_t comm_size,
                              const um_params_t *params, char *err, size_t errlen);
void um_engine_destroy(um_engine_t *engine);

/* A new receive: returns the earliest-arrived matching message (removed from
 * the unexpected queue), or queues the receive (out->handle == NULL). */
int um_engine_post_recv(um_engine_t *engine, int32_t source, int32_t tag,
                        const um_hint_t *hint, void *request, um_match_t *out);
/* A new message, in MPI order for its source: returns the earliest-posted
 * matching receive (removed), or queues the message as unexpected. */
int um_engine_arrive(um_engine_t *engine, int32_t source, int32_t tag,
                     const um_hint_t *hint, void *message, um_match_t *out);
/* n receives posted (messages arrived) in order, as n calls of
 * um_engine_post_recv (um_engine_arrive) with one hint would: out[i] is
 * element i's result. *done (unless NULL) says how many were done: an error
 * stops the batch at its element, whose status is returned; those before it
 * stay done, it and those after are not. The overtaking backends run a batch
 * in one loop, without the per-call checks and dispatch. */
int um_engine_post_recv_batch(um_engine_t *engine, const um_elem_t *elems, size_t n,
                              const um_hint_t *hint, um_match_t *out, size_t *done);
int um_engine_arrive_batch(um_engine_t *engine, const um_elem_t *elems, size_t n,
                           const um_hint_t *hint, um_match_t *out, size_t *done);
/* Finds the message a receive would take, without removing it. */
int um_engine_probe(um_engine_t *engine, int32_t source, int32_t tag,
                    const um_hint_t *hint, um_match_t *out);
/* Finds and removes the message a receive would take (MPI_Mprobe). */
int um_engine_mprobe(um_engine_t *engine, int32_t source, int32_t tag,
                     const um_hint_t *hint, um_match_t *out);
/* Removes a queued receive posted with (source, tag). *removed is 1 when it
 * was queued and is now removed, 0 when it is not queued (already matched). */
int um_engine_cancel(um_engine_t *engine, int32_t source, int32_t tag, void *request,
                     int *removed);

void um_engine_stats(const um_engine_t *engine, um_stats_t *stats);
const char *um_engine_backend(const um_engine_t *engine);
/* Prints the statistics and both queues in order. */
void um_engine_dump(const um_engine_t *engine, FILE *out);

/* The registry of backends, in registration order. */
size_t um_backend_count(void);
const char *um_backend_name(size_t index);
const char *um_backend_description(size_t index);
/* A relaxed backend's assertions, comma-separated ("mpi_assert_no_any_source,
 * ..."): it refuses what they exclude with UM_ERR_ASSERTION. NULL: a backend
 * for full MPI matching (or index out of range). */
const char *um_backend_assertion(size_t index);
/* "list, perpeer, bins": for error messages and help strings. */
const char *um_backend_names(void);

const char *um_status_string(int status);
const char *um_coll_name(um_coll_t coll);

/* The SIMD kernels of the vector and fuzzy* backends, one per instruction set,
 * chosen at run time from the CPU. */
typedef enum um_kernel {
    UM_KERNEL_NONE = 0, /* the backend uses none */
    UM_KERNEL_SCALAR = 1,
    UM_KERNEL_AVX2 = 2,
    UM_KERNEL_AVX512 = 3 /* AVX-512 F, BW, VL and DQ */
} um_kernel_t;

/* "none", "scalar", "avx2", "avx512"; "invalid" otherwise. */
const char *um_kernel_name(um_kernel_t kernel);
/* The valid values of um_params_t.kernel: "auto, avx512, avx2, scalar". */
const char *um_kernel_names(void);
/* Resolves a kernel request (as um_params_t.kernel) on this CPU. Returns UM_OK
 * with *kernel set, *fell_back 1 and a warning in msg when the CPU lacks the
 * instruction set asked for (*kernel: the best it has); UM_ERR_ARG with a
 * message naming the valid values in msg for an unknown name. */
int um_kernel_select(const char *request, um_kernel_t *kernel, int *fell_back, char *msg,
                     size_t msglen);

/* The calls of collective operations on the engine's communicator, for the
 * col backends' profiling (the others ignore them): the first call of each
 * (hint->coll, msg_size range, comm_size range) is profiled from its begin to
 * its end, and while a call of a collective is open, that collective's
 * elements count for the call's bucket whatever their own sizes. Without
 * these calls, a bucket's first call ends when none of its elements is
 * queued any more. UM_ERR_ARG: hint NULL or hint->coll not a collective. */
int um_engine_collective_begin(um_engine_t *engine, const um_hint_t *hint);
int um_engine_collective_end(um_engine_t *engine, const um_hint_t *hint);

#ifdef __cplusplus
}
#endif

#endif /* UBERMATCH_ENGINE_H */

/*
 * queue_memory: bytes of matching structures per communicator, for every engine
 * backend against Open MPI ob1's per-peer structures.
 *
 *   queue_memory [--np N] [--elements M] [--csv]
 *
 * For every registered backend, an engine for a communicator of N processes
 * (default 64), its um_stats_t.bytes read at four points:
 *   empty    just created;
 *   touched  after traffic with every peer: from each rank one message received
 *            by an exact receive posted first and one received by a receive
 *            posted after it arrived, plus one ANY_SOURCE receive matched; the
 *            queues are empty again (what a communicator that has talked to
 *            every peer keeps);
 *   loaded   with M exact receives and M unexpected messages queued (default
 *            1024 each), spread round-robin over the N peers, distinct tags;
 *   drained  after cancelling those receives and receiving those messages.
 * per element = (loaded - touched) / (2 M).
 *
 * ob1 (Open MPI 4.1.4, ompi/mca/pml/ob1/pml_ob1_comm.h) keeps per communicator one
 * mca_pml_ob1_comm_t, an array of N pointers (calloc'd when the communicator is
 * created) and, created on the first message to or from a peer, one
 * mca_pml_ob1_comm_proc_t per peer holding that peer's two queues. Their sizes
 * are taken with sizeof from copies of the two structures below, compiled against
 * the installed Open MPI headers (opal_list_t, opal_mutex_t of this build). So
 * ob1: empty = sizeof(comm) + 8 N, touched = empty + N sizeof(comm_proc); a
 * queued element adds no structure (the queues link the requests and fragments
 * through the opal_list_item_t inside them), so loaded = touched. malloc adds
 * up to 16 bytes per allocation to all of these (not counted, for either).
 *
 * Output: a markdown table (or CSV with --csv).
 */
#include <ompi_config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matching/ubermatch_engine.h"
#include "opal/class/opal_list.h"
#include "opal/threads/mutex.h"

/* Copies of Open MPI 4.1.4's ompi/mca/pml/ob1/pml_ob1_comm.h (not installed). */
struct ob1_comm_proc_t {
    opal_object_t super;
    struct ompi_proc_t *ompi_proc;
    uint16_t expected_sequence;
#if OPAL_ENABLE_MULTI_THREADS
    volatile int32_t send_sequence;
#else
    int32_t send_sequence;
#endif
    struct mca_pml_ob1_recv_frag_t *frags_cant_match;
    opal_list_t specific_receives;
    opal_list_t unexpected_frags;
};

struct ob1_comm_t {
    opal_object_t super;
    volatile uint32_t recv_sequence;
    opal_mutex_t matching_lock;
    opal_list_t wild_receives;
    opal_mutex_t proc_lock;
    struct ob1_comm_proc_t **procs;
    size_t num_procs;
    size_t last_probed;
};

static uintptr_t next_handle;
static void *handle(void) { return (void *)++next_handle; }

static void check(int rc, const char *what) {
    if (rc != UM_OK) {
        fprintf(stderr, "queue_memory: %s: %s\n", what, um_status_string(rc));
        exit(1);
    }
}

static uint64_t bytes_of(const um_engine_t *e) {
    um_stats_t s;
    um_engine_stats(e, &s);
    return s.bytes;
}

int main(int argc, char **argv) {
    int n = 64, m = 1024, csv = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--np") == 0 && a + 1 < argc) n = atoi(argv[++a]);
        else if (strcmp(argv[a], "--elements") == 0 && a + 1 < argc) m = atoi(argv[++a]);
        else if (strcmp(argv[a], "--csv") == 0) csv = 1;
        else n = 0;
    }
    if (n < 1 || n > 1 << 20 || m < 1 || m > 1 << 22) {
        fprintf(stderr, "usage: queue_memory [--np N] [--elements M] [--csv]\n");
        return 2;
    }

    size_t ob1_empty = sizeof(struct ob1_comm_t) + (size_t)n * sizeof(struct ob1_comm_proc_t *);
    size_t ob1_touched = ob1_empty + (size_t)n * sizeof(struct ob1_comm_proc_t);
    if (csv) printf("backend,np,elements,empty,touched,loaded,drained,per_element\n");
    else {
        printf("Bytes of matching structures of one communicator of %d processes; loaded: %d exact receives and %d "
               "unexpected messages queued, spread over the peers.\n\n",
               n, m, m);
        printf("| backend | empty | every peer touched | loaded | per element | drained | touched / ob1 |\n");
        printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    }

    um_hint_t hint = {UM_COLL_NONE, 0, 8, (uint32_t)n};
    void **reqs = malloc((size_t)m * sizeof *reqs);
    if (!reqs) return 1;
    for (size_t b = 0; b < um_backend_count(); b++) {
        const char *name = um_backend_name(b);
        um_params_t params;
        um_params_init(&params);
        char err[512];
        um_engine_t *e = um_engine_create(name, n, &params, err, sizeof err);
        if (!e) {
            fprintf(stderr, "queue_memory: %s: %s\n", name, err);
            return 1;
        }
        um_match_t r;
        uint64_t empty = bytes_of(e);
        for (int p = 0; p < n; p++) {
            check(um_engine_post_recv(e, p, 1, &hint, handle(), &r), "post");
            check(um_engine_arrive(e, p, 1, &hint, handle(), &r), "arrive");
            check(um_engine_arrive(e, p, 2, &hint, handle(), &r), "arrive");
            check(um_engine_post_recv(e, p, 2, &hint, handle(), &r), "post");
        }
        check(um_engine_post_recv(e, UM_ANY_SOURCE, 3, &hint, handle(), &r), "post");
        check(um_engine_arrive(e, n - 1, 3, &hint, handle(), &r), "arrive");
        uint64_t touched = bytes_of(e);
        for (int i = 0; i < m; i++) {
            reqs[i] = handle();
            check(um_engine_post_recv(e, i % n, 100 + i, &hint, reqs[i], &r), "post");
        }
        for (int i = 0; i < m; i++) check(um_engine_arrive(e, i % n, 100 + m + i, &hint, handle(), &r), "arrive");
        uint64_t loaded = bytes_of(e);
        for (int i = 0; i < m; i++) {
            int removed = 0;
            check(um_engine_cancel(e, i % n, 100 + i, reqs[i], &removed), "cancel");
            check(um_engine_post_recv(e, i % n, 100 + m + i, &hint, handle(), &r), "post");
            if (!removed || !r.handle) {
                fprintf(stderr, "queue_memory: %s: drain failed\n", name);
                return 1;
            }
        }
        uint64_t drained = bytes_of(e);
        double per = ((double)loaded - (double)touched) / (2.0 * m);
        if (csv)
            printf("%s,%d,%d,%llu,%llu,%llu,%llu,%.1f\n", name, n, m, (unsigned long long)empty,
                   (unsigned long long)touched, (unsigned long long)loaded, (unsigned long long)drained, per);
        else
            printf("| %s | %llu | %llu | %llu | %.1f | %llu | %.2f |\n", name, (unsigned long long)empty,
                   (unsigned long long)touched, (unsigned long long)loaded, per, (unsigned long long)drained,
                   (double)touched / (double)ob1_touched);
        um_engine_destroy(e);
    }
    free(reqs);
    if (csv)
        printf("ob1,%d,%d,%zu,%zu,%zu,%zu,0.0\n", n, m, ob1_empty, ob1_touched, ob1_touched, ob1_touched);
    else {
        printf("| **ob1** (computed) | %zu | %zu | %zu | 0 (in the request) | %zu | 1.00 |\n", ob1_empty, ob1_touched,
               ob1_touched, ob1_touched);
        printf("\nob1: sizeof(mca_pml_ob1_comm_t) = %zu, pointer array %d x 8, sizeof(mca_pml_ob1_comm_proc_t) = %zu "
               "(opal_list_t %zu, opal_mutex_t %zu, opal_object_t %zu) per peer, created on first traffic.\n",
               sizeof(struct ob1_comm_t), n, sizeof(struct ob1_comm_proc_t), sizeof(opal_list_t),
               sizeof(opal_mutex_t), sizeof(opal_object_t));
    }
    return 0;
}

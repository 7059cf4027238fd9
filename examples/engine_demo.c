/*
 * The engine demo: the queue traffic rank 0 of a small job would see, played
 * through every backend with the C interface the PML uses, and the search
 * depths each backend needed.
 *
 * The workload, on a communicator of 64 ranks, repeated for several steps:
 *  - a halo exchange: receives from 6 neighbours pre-posted, then their messages;
 *  - a manager loop: ANY_SOURCE receives answered by 63 workers, with messages
 *    arriving early (unexpected) half of the time;
 *  - an allreduce: collective (negative-tag) messages from 6 partners;
 *  - a burst of 512 early messages from every worker, drained with exact receives.
 *
 * `engine_demo --list-backends` prints the registered backends for full MPI matching
 * (not the relaxed ones of issue 14), one a line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matching/ubermatch_engine.h"

enum { COMM_SIZE = 64, STEPS = 20, COLL_TAG = -17 };

static uintptr_t next_handle = 0;

static void *new_handle(void) { return (void *)++next_handle; }

static void check(int rc) {
    if (rc != UM_OK) {
        fprintf(stderr, "engine call failed: %s\n", um_status_string(rc));
        exit(1);
    }
}

static void recv(um_engine_t *e, int src, int tag, um_coll_t coll) {
    um_hint_t hint = {(uint16_t)coll, 0, 8, COMM_SIZE};
    um_match_t m;
    check(um_engine_post_recv(e, src, tag, &hint, new_handle(), &m));
}

static void msg(um_engine_t *e, int src, int tag, um_coll_t coll) {
    um_hint_t hint = {(uint16_t)coll, 0, 8, COMM_SIZE};
    um_match_t m;
    check(um_engine_arrive(e, src, tag, &hint, new_handle(), &m));
}

static void run(um_engine_t *e) {
    static const int neighbours[6] = {1, 8, 7, 63, 56, 57};
    for (int step = 0; step < STEPS; ++step) {
        for (int i = 0; i < 6; ++i) {
            recv(e, neighbours[i], 100 + i, UM_COLL_NONE);
        }
        for (int i = 5; i >= 0; --i) {
            msg(e, neighbours[i], 100 + i, UM_COLL_NONE);
        }
        for (int w = 1; w < COMM_SIZE; ++w) {
            if (w % 2 == 0) {
                msg(e, w, 7, UM_COLL_NONE);
                recv(e, UM_ANY_SOURCE, 7, UM_COLL_NONE);
            } else {
                recv(e, UM_ANY_SOURCE, 7, UM_COLL_NONE);
                msg(e, w, 7, UM_COLL_NONE);
            }
        }
        for (int i = 0; i < 6; ++i) {
            recv(e, neighbours[i], COLL_TAG, UM_COLL_ALLREDUCE);
        }
        for (int i = 0; i < 6; ++i) {
            msg(e, neighbours[i], COLL_TAG, UM_COLL_ALLREDUCE);
        }
        for (int k = 0; k < 8; ++k) {
            for (int w = 1; w < COMM_SIZE; ++w) {
                msg(e, w, 1000 + k, UM_COLL_NONE);
            }
        }
        for (int w = COMM_SIZE - 1; w >= 1; --w) {
            for (int k = 7; k >= 0; --k) {
                recv(e, w, 1000 + k, UM_COLL_NONE);
            }
        }
    }
}

int main(int argc, char **argv) {
    um_params_t params;
    if (argc > 1 && strcmp(argv[1], "--list-backends") == 0) {
        for (size_t b = 0; b < um_backend_count(); ++b) {
            if (um_backend_assertion(b) == NULL) { /* relaxed ones refuse wildcards */
                printf("%s\n", um_backend_name(b));
            }
        }
        return 0;
    }
    um_params_init(&params);
    printf("ubermatch engine demo: %d steps of halo exchange, manager loop (ANY_SOURCE),\n"
           "allreduce and an unexpected burst, as rank 0 of %d ranks sees them\n\n",
           STEPS, COMM_SIZE);
    printf("%-10s %9s %9s %11s %9s %9s %8s %9s %8s\n", "backend", "searches", "matches",
           "mean depth", "max depth", "max post", "max unx", "queues", "KiB");
    for (size_t b = 0; b < um_backend_count(); ++b) {
        if (um_backend_assertion(b) != NULL) {
            continue; /* the demo's manager loop uses ANY_SOURCE */
        }
        char err[256];
        um_engine_t *e = um_engine_create(um_backend_name(b), COMM_SIZE, &params, err, sizeof err);
        if (e == NULL) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        run(e);
        um_stats_t s;
        um_engine_stats(e, &s);
        const uint64_t searches = s.p2p.searches + s.coll.searches;
        const uint64_t inspected = s.p2p.inspected + s.coll.inspected;
        const uint64_t max = s.p2p.max_inspected > s.coll.max_inspected ? s.p2p.max_inspected
                                                                         : s.coll.max_inspected;
        if (s.posted_len != 0 || s.unexpected_len != 0) {
            fprintf(stderr, "%s left elements queued\n", um_backend_name(b));
            return 1;
        }
        printf("%-10s %9llu %9llu %11.2f %9llu %9llu %8llu %9llu %8.1f\n", um_backend_name(b),
               (unsigned long long)searches, (unsigned long long)(s.p2p.matches + s.coll.matches),
               (double)inspected / (double)searches, (unsigned long long)max,
               (unsigned long long)s.posted_max, (unsigned long long)s.unexpected_max,
               (unsigned long long)s.queues, (double)s.bytes / 1024.0);
        um_engine_destroy(e);
    }
    return 0;
}

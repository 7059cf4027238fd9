/*
 * pml/ubermatch module: the PML interface of Open MPI 4.1 over the protocol core.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "matching/um_trace.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/ubermatch/pml_ubermatch_request.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"

/* With pml_ubermatch_trace: every this many progress rounds that found nothing
 * to do, the recorder is asked to write what it holds once a second has passed
 * without a record, so a job killed in a hang leaves a replayable trace. */
#define PML_UM_TRACE_IDLE_ROUNDS (1 << 16)
static bool trace_idle_on;
static uint32_t trace_idle_left = PML_UM_TRACE_IDLE_ROUNDS;

mca_pml_ubermatch_module_t mca_pml_ubermatch = {
    .super = {
        .pml_add_procs = mca_pml_ubermatch_add_procs,
        .pml_del_procs = mca_pml_ubermatch_del_procs,
        .pml_enable = mca_pml_ubermatch_enable,
        .pml_progress = mca_pml_ubermatch_progress, /* also registered with opal_progress */
        .pml_add_comm = mca_pml_ubermatch_add_comm,
        .pml_del_comm = mca_pml_ubermatch_del_comm,
        .pml_irecv_init = mca_pml_ubermatch_irecv_init,
        .pml_irecv = mca_pml_ubermatch_irecv,
        .pml_recv = mca_pml_ubermatch_recv,
        .pml_isend_init = mca_pml_ubermatch_isend_init,
        .pml_isend = mca_pml_ubermatch_isend,
        .pml_send = mca_pml_ubermatch_send,
        .pml_iprobe = mca_pml_ubermatch_iprobe,
        .pml_probe = mca_pml_ubermatch_probe,
        .pml_start = mca_pml_ubermatch_start,
        .pml_improbe = mca_pml_ubermatch_improbe,
        .pml_mprobe = mca_pml_ubermatch_mprobe,
        .pml_imrecv = mca_pml_ubermatch_imrecv,
        .pml_mrecv = mca_pml_ubermatch_mrecv,
        .pml_dump = mca_pml_ubermatch_dump,
        .pml_ft_event = mca_pml_ubermatch_ft_event,
        .pml_max_contextid = 65535, /* pml_ubermatch_max_contextid, set at start-up */
        .pml_max_tag = INT_MAX,
        .pml_flags = 0,
    },
};

/* --- start-up and shutdown --- */

static int publish_address(void)
{
    void *address;
    size_t length;
    int rc;

    if (UM_PROTO_OK != um_proto_address(mca_pml_ubermatch.proto, &address, &length)) {
        return OMPI_ERROR;
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_pml_ubermatch_component.pmlm_version, address,
                    length);
    um_proto_address_release(mca_pml_ubermatch.proto, address);
    return rc;
}

/* A relaxed backend for every communicator gives up, job-wide, what no
 * communicator's info asked to give up: said once, by rank 0. */
static void warn_relaxed_backend(const char *backend)
{
    for (size_t i = 0; i < um_backend_count(); ++i) {
        const char *assertions = um_backend_assertion(i);
        if (NULL != assertions && 0 == strcmp(um_backend_name(i), backend)) {
            opal_output(0, "pml_ubermatch: warning: pml_ubermatch_backend = %s: every communicator "
                           "matches as if its info asserted %s%s; to relax chosen communicators "
                           "only, set those assertions in their info instead (docs/relaxed.md)",
                        backend, assertions,
                        NULL != strstr(assertions, "allow_overtaking")
                            ? " (messages of one source and tag may be received out of order)"
                            : "");
            return;
        }
    }
}

/* The index of pml_ubermatch_<param>'s value among its n valid names; -1,
 * having said why and named them all, when it is none of them. */
static int choice_of(const char *param, const char *value, const char *const names[], int n)
{
    char valid[128] = "";
    for (int i = 0; i < n; ++i) {
        if (NULL != value && 0 == strcmp(value, names[i])) {
            return i;
        }
        snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", 0 == i ? "" : ", ",
                 names[i]);
    }
    opal_output(0, "pml_ubermatch: cannot start: pml_ubermatch_%s = %s is not valid; valid values: %s",
                param, NULL != value ? value : "", valid);
    return -1;
}

int mca_pml_ubermatch_init_module(bool enable_mpi_threads)
{
    mca_pml_ubermatch_config_t *cfg = &mca_pml_ubermatch.config;
    um_proto_config_t config;
    char err[512];
    int rc;

    config.backend = cfg->backend;
    um_params_init(&config.params);
    config.params.bins = cfg->bins;
    config.params.kernel = cfg->kernel;
    config.params.compact_threshold = cfg->compact_threshold;
    config.params.theta = cfg->theta;
    config.params.k_c = cfg->k_c;
    config.params.k_p = cfg->k_p;
    config.params.index_at = cfg->index_at;
    config.params.list_at = cfg->list_at;
    config.params.index_rent = cfg->index_rent;
    config.params.max_index_bytes = cfg->max_index_bytes > (size_t) INT64_MAX
                                        ? INT64_MAX : (int64_t) cfg->max_index_bytes;
    config.params.timers = cfg->timers ? 1 : 0;
    config.params.timer_cutoff_ns = cfg->timer_cutoff_ns > (unsigned long long) INT64_MAX
                                        ? INT64_MAX
                                        : (int64_t) cfg->timer_cutoff_ns;
    config.thread_multiple = enable_mpi_threads;
    /* Checked whatever the thread level, so that a typo never passes unseen. */
    {
        static const char *const threadings[] = {"global", "tailq"}; /* config.tailq 0, 1 */
        config.tailq = choice_of("threading", cfg->threading, threadings, 2);
        if (config.tailq < 0) {
            return OMPI_ERR_BAD_PARAM;
        }
    }
    /* Range-checked here and by the protocol core (which also takes 0 as 1). */
    if (cfg->tailq_bins < 1 || cfg->tailq_bins > 256) {
        opal_output(0, "pml_ubermatch: cannot start: pml_ubermatch_tailq_bins = %d is out of range; "
                    "valid values are 1 .. 256", cfg->tailq_bins);
        return OMPI_ERR_BAD_PARAM;
    }
    config.tailq_bins = cfg->tailq_bins;
    if (cfg->max_contextid < 64 || cfg->max_contextid > PML_UM_MAX_CONTEXTID) {
        opal_output(0, "pml_ubermatch: cannot start: pml_ubermatch_max_contextid = %u is out of range; "
                    "valid values are 64 .. %u", cfg->max_contextid, (unsigned) PML_UM_MAX_CONTEXTID);
        return OMPI_ERR_BAD_PARAM;
    }
    mca_pml_ubermatch.super.pml_max_contextid = cfg->max_contextid;
    if (config.tailq && enable_mpi_threads && NULL != cfg->trace && '\0' != cfg->trace[0]) {
        /* The trace records one engine per communicator; tail queues have two. */
        if (0 == OMPI_PROC_MY_NAME->vpid) {
            opal_output(0, "pml_ubermatch: warning: pml_ubermatch_trace records through one "
                        "engine per communicator: pml_ubermatch_threading global is used");
        }
        config.tailq = 0;
    }
    config.fail_alloc_every = cfg->inject_alloc_failure;
    config.shm_eager_limit = cfg->shm_eager_limit;
    config.shm_pull = cfg->shm_pull ? 1 : 0;
    if (0 != cfg->shm_stage_max &&
        (cfg->shm_stage_max < PML_UM_STAGE_MIN || cfg->shm_stage_max > PML_UM_STAGE_MAX)) {
        opal_output(0, "pml_ubermatch: cannot start: pml_ubermatch_shm_stage_max = %zu is out of "
                    "range; valid values are 0 (never) and %d .. %d",
                    cfg->shm_stage_max, PML_UM_STAGE_MIN, PML_UM_STAGE_MAX);
        return OMPI_ERR_BAD_PARAM;
    }
    config.shm_stage_max = cfg->shm_stage_max;
    {
        static const char *const ways[] = {"measure", "always", "never"}; /* UM_PROTO_PACK_STAGE_* */
        config.shm_pack_stage = choice_of("shm_pack_stage", cfg->shm_pack_stage, ways, 3);
        if (config.shm_pack_stage < 0) {
            return OMPI_ERR_BAD_PARAM;
        }
    }
    config.shm_ring_cells = 0;
    if (cfg->hwloc && cfg->shm_eager_limit > 0) {
        char why[512];
        um_proto_plan_rings((unsigned) ompi_process_info.num_local_peers + 1,
                            cfg->shm_eager_limit, &config.shm_ring_cells, why, sizeof(why));
        PML_UM_VERBOSE(1, "hwloc: %s", why);
    } else {
        PML_UM_VERBOSE(1, "hwloc: not asked (pml_ubermatch_hwloc %d, shm_eager_limit %zu): rings "
                          "of 256 KiB", (int) cfg->hwloc, cfg->shm_eager_limit);
    }
    {
        /* Checked whatever the backend, so that a typo never passes unseen. */
        um_kernel_t kernel;
        int fell_back;
        if (UM_OK != um_kernel_select(cfg->kernel, &kernel, &fell_back, err, sizeof(err))) {
            opal_output(0, "pml_ubermatch: cannot start (pml_ubermatch_kernel = %s): %s",
                        cfg->kernel, err);
            return OMPI_ERR_BAD_PARAM;
        }
    }
    /* Every tuning parameter whatever the backend (a backend checks only its
     * own): so that pml_ubermatch_bins = -3 under auto is refused, not ignored. */
    if (UM_OK != um_params_check(&config.params, err, sizeof(err))) {
        opal_output(0, "pml_ubermatch: cannot start: %s", err);
        return OMPI_ERR_BAD_PARAM;
    }
    config.ucx_tls = (NULL != cfg->ucx_tls && '\0' != cfg->ucx_tls[0]) ? cfg->ucx_tls : NULL;
    config.ucx_rndv_thresh =
        (NULL != cfg->ucx_rndv_thresh && '\0' != cfg->ucx_rndv_thresh[0]) ? cfg->ucx_rndv_thresh
                                                                          : NULL;

    if (OMPI_SUCCESS != mca_pml_ubermatch_assert_init()) {
        return OMPI_ERR_BAD_PARAM;
    }
    /* Open MPI 4.1 names the job mpirun starts [[family,1]]; a job MPI_Comm_spawn
     * starts has another local number and ranks from 0 again, so its trace files
     * carry that number, and every header the whole id (ubermatch-replay tells
     * runs apart by family). */
    const uint32_t jobid = OMPI_PROC_MY_NAME->jobid;
    char tag[16] = "";
    if (1 != (jobid & 0xffff)) {
        snprintf(tag, sizeof(tag), "job%u", (unsigned) (jobid & 0xffff));
    }
    /* Checked whether or not a trace is asked for, so that a typo never passes unseen. */
    static const char *const writes[] = {"false", "true", "auto"}; /* um_trace_start's write_mode */
    const int write_mode = choice_of("trace_direct", cfg->trace_direct, writes, 3);
    if (write_mode < 0) {
        return OMPI_ERR_BAD_PARAM;
    }
    if (0 != um_trace_start(cfg->trace, enable_mpi_threads, write_mode, jobid, tag, err,
                            sizeof(err))) {
        opal_output(0, "pml_ubermatch: %s", err);
        return OMPI_ERR_BAD_PARAM;
    }
    trace_idle_on = NULL != cfg->trace && '\0' != cfg->trace[0];
    if (UM_PROTO_OK != um_proto_create(&config, &mca_pml_ubermatch_callbacks,
                                       &mca_pml_ubermatch.proto, err, sizeof(err))) {
        /* Asked for by name, so say why it cannot run rather than fall back quietly. */
        opal_output(0, "pml_ubermatch: cannot start (pml_ubermatch_backend = %s): %s",
                    cfg->backend, err);
        return OMPI_ERR_BAD_PARAM;
    }

    OBJ_CONSTRUCT(&mca_pml_ubermatch.requests, opal_free_list_t);
    rc = opal_free_list_init(&mca_pml_ubermatch.requests, sizeof(mca_pml_ubermatch_request_t),
                             opal_cache_line_size, OBJ_CLASS(mca_pml_ubermatch_request_t), 0,
                             opal_cache_line_size, 64, -1, 64, NULL, 0, NULL, NULL, NULL);
    if (OPAL_SUCCESS != rc || OMPI_SUCCESS != mca_pml_ubermatch_request_cache_init()) {
        goto fail;
    }
    OBJ_CONSTRUCT(&mca_pml_ubermatch.connect_lock, opal_mutex_t);
    mca_pml_ubermatch_completed_send_init();
    mca_pml_ubermatch_pack_init();

    rc = publish_address();
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "pml_ubermatch: cannot publish the UCX worker address");
        goto fail;
    }
    opal_progress_register(mca_pml_ubermatch_progress);
    {
        um_kernel_t kernel = UM_KERNEL_NONE;
        int fell_back = 0;
        char msg[256];
        if (UM_OK == um_kernel_select(cfg->kernel, &kernel, &fell_back, msg, sizeof(msg)) &&
            fell_back && 0 == OMPI_PROC_MY_NAME->vpid) {
            opal_output(0, "pml_ubermatch: warning: %s", msg);
        }
        if (0 == OMPI_PROC_MY_NAME->vpid) {
            warn_relaxed_backend(config.backend);
        }
        PML_UM_VERBOSE(1, "backend %s, SIMD kernel %s, %s threads (%d bin(s)), UCX transports %s",
                       config.backend, um_kernel_name(kernel),
                       !enable_mpi_threads ? "single"
                       : config.tailq      ? "multiple (tail queues)"
                                           : "multiple (one lock)",
                       config.tailq ? config.tailq_bins : 1,
                       config.ucx_tls != NULL ? config.ucx_tls : "(UCX default)");
    }
    return OMPI_SUCCESS;

fail:
    um_proto_destroy(mca_pml_ubermatch.proto);
    mca_pml_ubermatch.proto = NULL;
    return OMPI_ERROR;
}

int mca_pml_ubermatch_fini_module(void)
{
    if (NULL == mca_pml_ubermatch.proto) {
        return OMPI_SUCCESS;
    }
    opal_progress_unregister(mca_pml_ubermatch_progress);
    {
        um_proto_faults_t f;
        um_proto_faults(mca_pml_ubermatch.proto, &f);
        if (0 != f.lost + f.dropped) {
            opal_output(0, "pml_ubermatch: rank %u: out of memory on the message path: %llu "
                           "messages lost their payload (their receives failed with "
                           "MPI_ERR_NO_MEM), %llu arrivals dropped, %llu spare descriptors used",
                        (unsigned) OMPI_PROC_MY_NAME->vpid, (unsigned long long) f.lost,
                        (unsigned long long) f.dropped, (unsigned long long) f.reserve_used);
        }
    }
    um_proto_destroy(mca_pml_ubermatch.proto);
    mca_pml_ubermatch.proto = NULL;
    mca_pml_ubermatch_request_cache_fini();
    OBJ_DESTRUCT(&mca_pml_ubermatch.requests);
    OBJ_DESTRUCT(&mca_pml_ubermatch.connect_lock);
    mca_pml_ubermatch_completed_send_fini();
    mca_pml_ubermatch_pack_fini();
    return OMPI_SUCCESS;
}

int mca_pml_ubermatch_enable(bool enable)
{
    (void) enable;
    return OMPI_SUCCESS;
}

/* No checkpoint/restart support in Open MPI 4.1's Debian build: nothing to save. */
int mca_pml_ubermatch_ft_event(int state)
{
    (void) state;
    return OMPI_SUCCESS;
}

int mca_pml_ubermatch_progress(void)
{
    const int n = um_proto_progress(mca_pml_ubermatch.proto);
    if (OPAL_UNLIKELY(trace_idle_on) && 0 == n && 0 == --trace_idle_left) {
        trace_idle_left = PML_UM_TRACE_IDLE_ROUNDS;
        um_trace_idle();
    }
    return n;
}

/* --- peers: endpoints are made on first send --- */

um_proto_peer_t *mca_pml_ubermatch_connect(ompi_proc_t *proc)
{
    um_proto_peer_t *peer;
    void *address = NULL;
    size_t length = 0;
    char err[256];
    int rc;

    OPAL_THREAD_LOCK(&mca_pml_ubermatch.connect_lock);
    peer = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    if (NULL == peer) {
        OPAL_MODEX_RECV(rc, &mca_pml_ubermatch_component.pmlm_version, &proc->super.proc_name,
                        &address, &length);
        if (OPAL_SUCCESS != rc) {
            opal_output(0, "pml_ubermatch: no UCX address of process %u: %s",
                        proc->super.proc_name.vpid, opal_strerror(rc));
        } else {
            /* Not to ourselves: UCX's self transport is a function call. */
            const int local = proc != ompi_proc_local() &&
                              OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
            peer = um_proto_connect(mca_pml_ubermatch.proto, address, length, local, err,
                                    sizeof(err));
            free(address);
            if (NULL == peer) {
                opal_output(0, "pml_ubermatch: cannot connect to process %u: %s",
                            proc->super.proc_name.vpid, err);
            } else {
                if (mca_pml_ubermatch.config.verbose >= 2) {
                    char tls[256];
                    um_proto_peer_transports(mca_pml_ubermatch.proto, peer, tls, sizeof(tls));
                    PML_UM_VERBOSE(2, "rank %u on %s: connected to process %u (%s node), UCX %s",
                                   (unsigned) OMPI_PROC_MY_NAME->vpid,
                                   ompi_process_info.nodename, proc->super.proc_name.vpid,
                                   local ? "same" : "other", tls);
                }
                proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = peer;
            }
        }
    }
    OPAL_THREAD_UNLOCK(&mca_pml_ubermatch.connect_lock);
    return peer;
}

int mca_pml_ubermatch_add_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    (void) procs;
    (void) nprocs;
    return OMPI_SUCCESS;
}

static void fence_done(int status, void *flag)
{
    (void) status;
    *(volatile int *) flag = 1;
}

int mca_pml_ubermatch_del_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    um_proto_peer_t **peers = malloc(nprocs * sizeof(*peers));
    volatile int fenced = 0;

    if (NULL == peers) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (size_t i = 0; i < nprocs; ++i) {
        peers[i] = procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
        procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = NULL;
    }
    if (mca_pml_ubermatch.config.verbose >= 1) { /* before the peers go: what they carried */
        um_proto_shm_counts_t c;
        um_proto_shm_stats(mca_pml_ubermatch.proto, &c);
        PML_UM_VERBOSE(1, "rank %u: shared-memory rings: %llu messages sent through %u, %llu "
                          "received through %u of %llu KiB in all (messages up to %zu bytes; "
                          "pml_ubermatch_shm_eager_limit %zu); %llu sent and %llu received as "
                          "pulls (%llu sent while packed, %llu of them contiguous data copied into "
                          "shared memory, %llu received from the sender's shared memory; "
                          "%llu sent as rows packed through a stage, %llu packed straight (measured "
                          "%llu and %llu clock ticks a KiB); "
                          "pml_ubermatch_shm_pull %d, shm_stage_max %zu, shm_pack_stage %s)",
                       (unsigned) OMPI_PROC_MY_NAME->vpid, (unsigned long long) c.sent,
                       (unsigned) c.rings_out, (unsigned long long) c.received,
                       (unsigned) c.rings_in, (unsigned long long) (c.ring_bytes_in >> 10),
                       c.eager_limit, mca_pml_ubermatch.config.shm_eager_limit,
                       (unsigned long long) c.pulls_sent, (unsigned long long) c.pulls_read,
                       (unsigned long long) c.pulls_streamed, (unsigned long long) c.pulls_staged,
                       (unsigned long long) c.pulls_mapped, (unsigned long long) c.rows_staged,
                       (unsigned long long) c.rows_straight, (unsigned long long) c.rows_cost_staged,
                       (unsigned long long) c.rows_cost_straight, (int) mca_pml_ubermatch.config.shm_pull,
                       mca_pml_ubermatch.config.shm_stage_max, mca_pml_ubermatch.config.shm_pack_stage);
    }
    um_proto_disconnect(mca_pml_ubermatch.proto, peers, nprocs);
    free(peers);

    /* Nobody tears its worker down while a peer still flushes towards it. */
    if (OPAL_SUCCESS == opal_pmix.fence_nb(NULL, 0, fence_done, (void *) &fenced)) {
        while (!fenced) {
            um_proto_progress(mca_pml_ubermatch.proto);
            opal_progress();
        }
    }
    return OMPI_SUCCESS;
}

/* --- communicators --- */

int mca_pml_ubermatch_add_comm(struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_comm_t *state = malloc(sizeof(*state));
    char err[512];
    const char *backend;

    if (NULL == state) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    state->proto = NULL;
    comm->c_pml_comm = (struct mca_pml_comm_t *) state; /* the info callbacks find it */
    backend = mca_pml_ubermatch_assert_add_comm(comm);
    if (UM_PROTO_OK != um_proto_comm_create(mca_pml_ubermatch.proto, comm->c_contextid,
                                            ompi_comm_rank(comm),
                                            mca_pml_ubermatch_peer_count(comm), backend,
                                            &state->proto, err, sizeof(err))) {
        opal_output(0, "pml_ubermatch: cannot create the matching engine of %s: %s",
                    comm->c_name, err);
        comm->c_pml_comm = NULL;
        free(state);
        return OMPI_ERR_BAD_PARAM;
    }
    mca_pml_ubermatch_coll_construct(&state->coll);
    PML_UM_VERBOSE(2, "communicator %u (%s): %d peers, engine %s (assertions 0x%x)",
                   comm->c_contextid, comm->c_name, mca_pml_ubermatch_peer_count(comm),
                   NULL != backend ? backend : um_proto_backend(mca_pml_ubermatch.proto),
                   (unsigned) state->applied);
    return OMPI_SUCCESS;
}

static void print_stats(struct ompi_communicator_t *comm)
{
    um_stats_t s;
    um_proto_comm_info_t info;
    uint64_t searches, inspected, deepest;

    um_proto_comm_stats(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &s);
    um_proto_comm_info(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &info);
    searches = s.p2p.searches + s.coll.searches;
    if (0 == searches) {
        return;
    }
    inspected = s.p2p.inspected + s.coll.inspected;
    deepest = s.p2p.max_inspected > s.coll.max_inspected ? s.p2p.max_inspected
                                                         : s.coll.max_inspected;
    fprintf(stderr,
            "[ubermatch] rank %u, %s (cid %u), engine %s: %llu searches (%llu p2p, %llu "
            "collective), %llu matches, mean depth %.2f, max depth %llu, posted max %llu, "
            "unexpected max %llu, queues %llu, %llu bytes\n",
            (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name, comm->c_contextid,
            info.backend, (unsigned long long) searches,
            (unsigned long long) s.p2p.searches, (unsigned long long) s.coll.searches,
            (unsigned long long) (s.p2p.matches + s.coll.matches),
            (double) inspected / (double) searches, (unsigned long long) deepest,
            (unsigned long long) s.posted_max, (unsigned long long) s.unexpected_max,
            (unsigned long long) s.queues, (unsigned long long) s.bytes);
    if (UM_KERNEL_NONE != s.kernel) {
        fprintf(stderr,
                "[ubermatch] rank %u, %s: SIMD kernel %s, %llu false positives, %llu blocks, "
                "%llu holes, %llu compactions\n",
                (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name,
                um_kernel_name((um_kernel_t) s.kernel), (unsigned long long) s.false_positives,
                (unsigned long long) s.blocks, (unsigned long long) s.holes,
                (unsigned long long) s.compactions);
    }
    if ('\0' != info.coll_backend[0]) {
        fprintf(stderr,
                "[ubermatch] rank %u, %s: relaxed engine (assertions 0x%x), Open MPI's own "
                "traffic apart in %s; %llu arrivals found no receive under "
                "ubermatch_no_unexpected\n",
                (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name, (unsigned) info.relaxed,
                info.coll_backend, (unsigned long long) info.refused);
    }
    if (0 == strcmp(info.backend, "auto")) {
        fprintf(stderr,
                "[ubermatch] rank %u, %s: auto: %llu of 4 queues indexed now, %llu changes of "
                "form, index %llu bytes, %llu times kept a list by max_index_bytes\n",
                (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name,
                (unsigned long long) s.indexed, (unsigned long long) s.reshapes,
                (unsigned long long) s.index_bytes, (unsigned long long) s.memory_limited);
    }
    if (mca_pml_ubermatch.config.timers) {
        fprintf(stderr,
                "[ubermatch] rank %u, %s: search ns p2p %llu (posted queue %llu), collective "
                "%llu (posted queue %llu), overhead ns %llu, timer outliers %llu\n",
                (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name,
                (unsigned long long) s.p2p.search_ns, (unsigned long long) s.p2p.posted_search_ns,
                (unsigned long long) s.coll.search_ns,
                (unsigned long long) s.coll.posted_search_ns, (unsigned long long) s.overhead_ns,
                (unsigned long long) s.timer_outliers);
    }
    if (0 != s.dedicated_p2p + s.dedicated_coll) {
        fprintf(stderr, "[ubermatch] rank %u, %s: dedicated queues p2p %llu, collective %llu\n",
                (unsigned) OMPI_PROC_MY_NAME->vpid, comm->c_name,
                (unsigned long long) s.dedicated_p2p, (unsigned long long) s.dedicated_coll);
    }
}

int mca_pml_ubermatch_del_comm(struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_comm_t *state = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    if (NULL == state) {
        return OMPI_SUCCESS;
    }
    if (mca_pml_ubermatch.config.print_stats) {
        print_stats(comm);
        mca_pml_ubermatch_coll_print_stats(comm);
    }
    um_proto_comm_destroy(mca_pml_ubermatch.proto, state->proto);
    mca_pml_ubermatch_coll_destruct(&state->coll);
    comm->c_pml_comm = NULL;
    free(state);
    return OMPI_SUCCESS;
}

/* --- the engine's hint --- */

void mca_pml_ubermatch_hint_coll(int tag, size_t bytes, struct ompi_communicator_t *comm,
                                 um_hint_t *hint)
{
    /* Open MPI's blocking collective tags, MCA_COLL_BASE_TAG_ALLGATHER (-10)
     * to MCA_COLL_BASE_TAG_SCATTERV (-26), in order. */
    static const uint16_t blocking[] = {
        UM_COLL_ALLGATHER, UM_COLL_ALLGATHERV, UM_COLL_ALLREDUCE,      UM_COLL_ALLTOALL,
        UM_COLL_ALLTOALLV, UM_COLL_ALLTOALLW,  UM_COLL_BARRIER,        UM_COLL_BCAST,
        UM_COLL_EXSCAN,    UM_COLL_GATHER,     UM_COLL_GATHERV,        UM_COLL_REDUCE,
        UM_COLL_REDUCE_SCATTER, UM_COLL_REDUCE_SCATTER_BLOCK, UM_COLL_SCAN, UM_COLL_SCATTER,
        UM_COLL_SCATTERV,
    };
    (void) bytes;
    if (mca_pml_ubermatch_coll_hint(comm, tag, hint)) {
        /* coll/ubermatch named the collective, its message size and communicator size */
    } else if (tag <= MCA_COLL_BASE_TAG_ALLGATHER && tag >= MCA_COLL_BASE_TAG_SCATTERV) {
        hint->coll = blocking[MCA_COLL_BASE_TAG_ALLGATHER - tag];
    } else if (tag <= MCA_COLL_BASE_TAG_NEIGHBOR_BASE && tag >= MCA_COLL_BASE_TAG_NEIGHBOR_END) {
        hint->coll = UM_COLL_NEIGHBOR;
    } else {
        hint->coll = UM_COLL_OTHER; /* nonblocking collectives coll/ubermatch did not see,
                                       and other internal traffic */
    }
}

/* --- sends and receives --- */

int mca_pml_ubermatch_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                                 int tag, mca_pml_base_send_mode_t mode,
                                 struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_ubermatch_request_t *req = mca_pml_ubermatch_request_alloc(
        PML_UM_SEND, true, buf, count, datatype, dst, tag, mode, comm);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int mca_pml_ubermatch_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                            int tag, mca_pml_base_send_mode_t mode,
                            struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_ubermatch_request_t *req;
    int rc;
    if (mca_pml_ubermatch_send_now(buf, count, datatype, dst, tag, mode, comm)) {
        *request = &mca_pml_ubermatch.completed_send;
        return OMPI_SUCCESS;
    }
    req = mca_pml_ubermatch_request_alloc(PML_UM_SEND, false, buf, count, datatype, dst, tag, mode,
                                          comm);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->ompi;
    rc = mca_pml_ubermatch_request_start(req);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        mca_pml_ubermatch_request_release(req);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

/* Blocking calls drive our worker directly and the rest of Open MPI (other
 * components' progress, events) every PML_UM_OPAL_PROGRESS_EVERY rounds, as
 * pml_ucx does: opal_progress on every round costs more than a short
 * message. Nobody else waits on these requests, so no sync object is needed.
 * On an oversubscribed node (Open MPI's yield_when_idle) a round that found
 * nothing gives the core away, as opal_progress does. With threads, Open MPI's
 * own wait: one thread progresses, the others sleep until their request
 * completes (spinning, they took the cores the progressing thread needed:
 * MPICH's threads/pt2pt `threads`, 2 ranks of 4 threads on 2 cores, timed out
 * at 180 s where ob1 had just passed in 21 s); but first PML_UM_THREADS_SPIN
 * rounds of our own progress, a few microseconds: a reply that comes that soon
 * is seen without the wait object's mutex and condition (8 B latency with
 * threads 0.104-0.107 us against 0.154-0.156; docs/message-path.md round 18). */
#define PML_UM_OPAL_PROGRESS_EVERY 64
#define PML_UM_THREADS_SPIN 256
static inline void mca_pml_ubermatch_wait(ompi_request_t *req)
{
    unsigned rounds = 0;
    if (opal_using_threads()) {
        for (; rounds < PML_UM_THREADS_SPIN && !REQUEST_COMPLETE(req); ++rounds) {
            um_proto_progress(mca_pml_ubermatch.proto);
        }
        ompi_request_wait_completion(req);
        return;
    }
    while (!REQUEST_COMPLETE(req)) {
        if (OPAL_UNLIKELY(++rounds % PML_UM_OPAL_PROGRESS_EVERY == 0)) {
            opal_progress();
        } else if (0 == um_proto_progress(mca_pml_ubermatch.proto) &&
                   OPAL_UNLIKELY(opal_progress_yield_when_idle)) {
            sched_yield();
        }
    }
    opal_atomic_rmb(); /* the status was written before completion */
}

/* Waits for a request started here and returns its error code. The caller's
 * status gets every field but MPI_ERROR: single-completion calls return the
 * error and leave that field alone (MPI 4.0, 3.2.5). */
static int wait_and_release(mca_pml_ubermatch_request_t *req, ompi_status_public_t *status)
{
    int rc;
    mca_pml_ubermatch_wait(&req->ompi);
    rc = req->ompi.req_status.MPI_ERROR;
    if (NULL != status) {
        OMPI_COPY_STATUS(status, req->ompi.req_status, false);
    }
    mca_pml_ubermatch_request_release(req);
    return rc;
}

int mca_pml_ubermatch_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode,
                           struct ompi_communicator_t *comm)
{
    ompi_request_t *request;
    int rc = mca_pml_ubermatch_isend(buf, count, datatype, dst, tag, mode, comm, &request);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (&mca_pml_ubermatch.completed_send == request) {
        return OMPI_SUCCESS;
    }
    return wait_and_release((mca_pml_ubermatch_request_t *) request, NULL);
}

int mca_pml_ubermatch_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src,
                                 int tag, struct ompi_communicator_t *comm,
                                 struct ompi_request_t **request)
{
    mca_pml_ubermatch_request_t *req = mca_pml_ubermatch_request_alloc(
        PML_UM_RECV, true, buf, count, datatype, src, tag, MCA_PML_BASE_SEND_STANDARD, comm);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int mca_pml_ubermatch_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                            struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    mca_pml_ubermatch_request_t *req = mca_pml_ubermatch_request_alloc(
        PML_UM_RECV, false, buf, count, datatype, src, tag, MCA_PML_BASE_SEND_STANDARD, comm);
    int rc;
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *request = &req->ompi;
    rc = mca_pml_ubermatch_recv_start(req, src, tag);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        mca_pml_ubermatch_request_release(req);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

int mca_pml_ubermatch_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           struct ompi_communicator_t *comm, ompi_status_public_t *status)
{
    ompi_request_t *request;
    int rc = mca_pml_ubermatch_irecv(buf, count, datatype, src, tag, comm, &request);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    return wait_and_release((mca_pml_ubermatch_request_t *) request, status);
}

/* --- matched receives (the probes are in pml_ubermatch_probe.c) --- */

int mca_pml_ubermatch_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                             struct ompi_message_t **message, struct ompi_request_t **request)
{
    struct ompi_message_t *m = *message;
    mca_pml_ubermatch_request_t *req = mca_pml_ubermatch_request_alloc(
        PML_UM_RECV, false, buf, count, datatype, m->peer, MPI_ANY_TAG, MCA_PML_BASE_SEND_STANDARD,
        m->comm);
    um_proto_msg_t *msg = m->req_ptr;
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    ompi_message_return(m);
    *message = MPI_MESSAGE_NULL;
    *request = &req->ompi;
    return mca_pml_ubermatch_request_start_mrecv(req, msg);
}

int mca_pml_ubermatch_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                            struct ompi_message_t **message, ompi_status_public_t *status)
{
    ompi_request_t *request;
    int rc = mca_pml_ubermatch_imrecv(buf, count, datatype, message, &request);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    return wait_and_release((mca_pml_ubermatch_request_t *) request, status);
}

int mca_pml_ubermatch_dump(struct ompi_communicator_t *comm, int verbose)
{
    (void) verbose;
    if (NULL != mca_pml_ubermatch_comm(comm)) {
        um_proto_comm_dump(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), stderr);
    }
    return OMPI_SUCCESS;
}

/*
 * pml/ubermatch component: registers the MCA variables and pvars, and
 * creates the module when selected.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

static int mca_pml_ubermatch_component_register(void);
static int mca_pml_ubermatch_component_open(void);
static int mca_pml_ubermatch_component_close(void);
static mca_pml_base_module_t *mca_pml_ubermatch_component_init(int *priority,
                                                               bool enable_progress_threads,
                                                               bool enable_mpi_threads);
static int mca_pml_ubermatch_component_fini(void);

mca_pml_base_component_2_0_0_t mca_pml_ubermatch_component = {
    .pmlm_version = {
        MCA_PML_BASE_VERSION_2_0_0,
        .mca_component_name = "ubermatch",
        .mca_component_major_version = UM_VERSION_MAJOR,
        .mca_component_minor_version = UM_VERSION_MINOR,
        .mca_component_release_version = UM_VERSION_RELEASE,
        .mca_open_component = mca_pml_ubermatch_component_open,
        .mca_close_component = mca_pml_ubermatch_component_close,
        .mca_register_component_params = mca_pml_ubermatch_component_register,
    },
    .pmlm_data = {
        .param_field = MCA_BASE_METADATA_PARAM_NONE,
    },
    .pmlm_init = mca_pml_ubermatch_component_init,
    .pmlm_finalize = mca_pml_ubermatch_component_fini,
};

/* A parameter a user may set, read once at start-up. */
static int register_var(const char *name, const char *help, mca_base_var_type_t type, int level,
                        void *storage)
{
    return mca_base_component_var_register(&mca_pml_ubermatch_component.pmlm_version, name, help,
                                           type, NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

/* Publishes the address of hooks another DSO calls (coll/ubermatch, libmpix_am)
 * in an internal MCA variable: read-only, hidden from ompi_info and MPI_T.
 * hooks: static, it lives as long as the component. */
int mca_pml_ubermatch_publish_hooks(const char *name, const char *help, const void *hooks)
{
    static unsigned long long addresses[2]; /* the variables' storage: one per caller */
    static unsigned used;
    unsigned long long *address;
    if (used == sizeof(addresses) / sizeof(addresses[0])) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    address = &addresses[used++];
    *address = (unsigned long long) (uintptr_t) hooks;
    int rc = mca_base_component_var_register(
        &mca_pml_ubermatch_component.pmlm_version, name, help,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, 0,
        MCA_BASE_VAR_FLAG_INTERNAL | MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_CONSTANT, address);
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* A string, not an enum: an unknown name then reaches our own check, whose
 * message lists the valid names (Open MPI 4.1's enum error is unreadable). */
static int register_backend(void)
{
    static char help[512];
    int rc;

    snprintf(help, sizeof(help),
             "Matching engine of every communicator, chosen at run time. Valid values: %s",
             um_backend_names());
    mca_pml_ubermatch.config.backend = "auto"; /* the cheapest search for each queue shape */
    rc = register_var("backend", help, MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_3,
                      &mca_pml_ubermatch.config.backend);
    return rc < 0 ? rc : OPAL_SUCCESS;
}

static int mca_pml_ubermatch_component_register(void)
{
    mca_pml_ubermatch_config_t *cfg = &mca_pml_ubermatch.config;
    um_params_t defaults;
    int rc;

    um_params_init(&defaults);

    /* Low: used when asked for (--mca pml ubermatch), never in place of ob1 or ucx. */
    cfg->priority = 5;
    (void) register_var("priority", "Selection priority of the ubermatch PML",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, &cfg->priority);

    rc = register_backend();
    if (OPAL_SUCCESS != rc) {
        return rc;
    }

    cfg->bins = (int) defaults.bins;
    (void) register_var("bins", "Hash bins of the `bins` engine, per communicator (1 .. 1048576)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->bins);

    cfg->kernel = "auto";
    {
        static char help[256];
        snprintf(help, sizeof(help),
                 "SIMD kernel of the vector and fuzzy* engines. Valid values: %s (auto: the best "
                 "this CPU runs; one it cannot run falls back to that, with a warning)",
                 um_kernel_names());
        (void) register_var("kernel", help, MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4,
                            &cfg->kernel);
    }
    {
        um_kernel_t best = UM_KERNEL_NONE;
        int fell_back = 0;
        char msg[256];
        (void) um_kernel_select("auto", &best, &fell_back, msg, sizeof(msg));
        cfg->kernel_detected = (char *) um_kernel_name(best);
        (void) mca_base_component_var_register(&mca_pml_ubermatch_component.pmlm_version,
                                               "kernel_detected",
                                               "The SIMD kernel `auto` picks on this CPU "
                                               "(read-only)",
                                               MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                               MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
                                               MCA_BASE_VAR_SCOPE_CONSTANT, &cfg->kernel_detected);
    }
    cfg->compact_threshold = defaults.compact_threshold;
    (void) register_var("compact_threshold",
                        "vector and fuzzy* engines: compact a queue when more than this fraction "
                        "of its slots are holes (0 .. 1; 1: never)",
                        MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_5, &cfg->compact_threshold);
    cfg->theta = (int) defaults.theta;
    (void) register_var("theta", "pnp, colpnp, list+pnp engines: a queue of theta elements makes "
                        "partners of the sources above the average (1 .. 1048576)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->theta);
    cfg->k_c = (int) defaults.k_c;
    (void) register_var("k_c", "col, colpnp, col+list engines: at most k_c * sqrt(n) collective "
                        "queues per communicator of n processes (1 .. 1024)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->k_c);
    cfg->k_p = (int) defaults.k_p;
    (void) register_var("k_p", "pnp, colpnp, list+pnp engines: at most k_p * sqrt(n) partner "
                        "queues per communicator of n processes (1 .. 1024)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->k_p);
    cfg->index_at = (int) defaults.index_at;
    (void) register_var("index_at", "auto engine: a queue where a search had to compare this "
                        "many elements is indexed (exact entries hashed, wildcards in filtered SIMD "
                        "blocks) (2 .. 1048576)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->index_at);
    cfg->list_at = (int) defaults.list_at;
    (void) register_var("list_at", "auto engine: an indexed queue down to this many elements is "
                        "a plain list again (0 .. index_at-1; the gap is the hysteresis)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->list_at);
    cfg->index_rent = (int) defaults.index_rent;
    (void) register_var("index_rent", "auto engine: a queue is indexed only once its searches of "
                        "index_at compares or more have compared index_rent times its length since "
                        "it was last list_at long (0 .. 1048576; 0: at the first such search; "
                        "-1: each queue learns it from whether its last index paid off). "
                        "ubermatch-replay's sweep says whether a job gains from a fixed one",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->index_rent);
    cfg->max_index_bytes = (size_t) defaults.max_index_bytes;
    (void) register_var("max_index_bytes", "auto engine: bytes the indices of one communicator "
                        "may hold; a queue whose index would pass it stays a list (0: never "
                        "index; at most 2^40)",
                        MCA_BASE_VAR_TYPE_SIZE_T, OPAL_INFO_LVL_4, &cfg->max_index_bytes);
    cfg->timers = false;
    (void) register_var("timers", "Time every engine's searches and queue restructuring (pvars "
                        "*_search_ns and overhead_ns, print_stats); off: no clock is read",
                        MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &cfg->timers);
    cfg->timer_cutoff_ns = 0;
    (void) register_var("timer_cutoff_ns",
                        "With timers: leave out (and count) timed intervals longer than this "
                        "many ns, e.g. a process descheduled on an oversubscribed node "
                        "(0 .. 10^12; 0: keep all)",
                        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, OPAL_INFO_LVL_5,
                        &cfg->timer_cutoff_ns);

    cfg->verbose = 0;
    (void) register_var("verbose", "Verbosity of the ubermatch PML (0: errors only, 1: "
                        "start-up and statistics, 2: connections and communicators, 3: every "
                        "collective call coll/ubermatch reports)",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &cfg->verbose);

    cfg->print_stats = false;
    (void) register_var("print_stats",
                        "Print the matching engine's statistics of every communicator with "
                        "traffic when it is freed (search depths, queue lengths, queues, bytes)",
                        MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_3, &cfg->print_stats);

    cfg->ucx_tls = NULL;
    (void) register_var("ucx_tls",
                        "UCX transports of the ubermatch worker (UCX_TLS syntax, e.g. tcp,self); "
                        "empty: UCX's default",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &cfg->ucx_tls);
    cfg->ucx_rndv_thresh = NULL;
    (void) register_var("ucx_rndv_thresh",
                        "Message size from which UCX uses rendezvous (UCX_RNDV_THRESH syntax, "
                        "e.g. 8k, auto or inf; a negative value is refused); empty: 64k, and "
                        "32k to a process of the same node "
                        "that UCX reaches with a single-copy lane (CMA, KNEM, XPMEM), unless "
                        "UCX_RNDV_THRESH is set (UCX's own choice, a few KiB, made 8-32 KiB "
                        "messages up to 6x slower)",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &cfg->ucx_rndv_thresh);
    cfg->inject_alloc_failure = 0;
    (void) register_var("inject_alloc_failure",
                        "Testing: every n-th allocation on the message path (the descriptor or "
                        "kept payload of an arriving message) fails, so "
                        "that the operation concerned ends with MPI_ERR_NO_MEM and nothing else "
                        "is lost; 0: never",
                        MCA_BASE_VAR_TYPE_UNSIGNED_INT, OPAL_INFO_LVL_9, &cfg->inject_alloc_failure);

    cfg->shm_eager_limit = 32768;
    (void) register_var("shm_eager_limit",
                        "Largest message (bytes) sent to a process of the same node through a "
                        "shared-memory ring of our own instead of UCX (docs/message-path.md), "
                        "0 .. 65496; 0: every message through UCX. A ring smaller than 16 times "
                        "this takes messages up to a 16th of its size, 8192 at least (32 KiB in "
                        "the 512 KiB rings of two processes on cores with 1 MiB of L2, 16 KiB in "
                        "256 KiB rings). Messages from 12 KiB go as pulls (shm_pull); "
                        "synchronous sends below that use UCX",
                        MCA_BASE_VAR_TYPE_SIZE_T, OPAL_INFO_LVL_4, &cfg->shm_eager_limit);

    cfg->shm_pull = true;
    (void) register_var("shm_pull",
                        "Messages from 12 KiB (and past the eager limit) to a process of the "
                        "same node whose ring is up go as a one-cell record naming the sender's "
                        "buffer: the receiver, once matched, reads it with Linux CMA "
                        "(process_vm_readv, checked when the ring is mapped) and hands it back "
                        "through the ring; non-contiguous data is packed into shared memory the "
                        "receiver maps and unpacks from, while the receiver unpacks (from 1 MiB "
                        "behind other pulls to the same receiver, packed by UCX as it sends); off, or "
                        "where CMA is not allowed: UCX's rendezvous",
                        MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, &cfg->shm_pull);

    cfg->shm_stage_max = 8 << 20;
    (void) register_var("shm_stage_max",
                        "With shm_pull: contiguous messages from 12 KiB up to this size (bytes) "
                        "are copied by the sender into shared memory that the receiver maps, "
                        "piece by piece while the receiver copies them out (two copies, no "
                        "system call), instead of being read by the receiver from the sender's "
                        "buffer with CMA (one copy and a process_vm_readv call, ~1 us a call "
                        "and ~60 ns a page on the machines measured: docs/message-path.md round "
                        "20); at most 64 MiB of them out at once, the rest by CMA. The arena "
                        "keeps up to 64 MiB of free buffers' pages a process: lower this (or 0) "
                        "where memory is short or CMA cheap. 0: never; else 12288 .. 67108864",
                        MCA_BASE_VAR_TYPE_SIZE_T, OPAL_INFO_LVL_4, &cfg->shm_stage_max);

    cfg->shm_pack_stage = "measure";
    (void) register_var("shm_pack_stage",
                        "With shm_pull: how a send of a derived datatype whose layout is rows of "
                        "64 bytes or more (up to 64 KiB packed) packs into shared memory while "
                        "its receiver unpacks: through a 16 KiB stage in this core's cache, then "
                        "copied (always), straight (never), or as measured while the job runs "
                        "(measure: each process times its packing both ways, packs straight "
                        "while that measures under 9/10 of the stage's cost, and sends 2 of "
                        "every 64 such messages the other way, to follow a change). "
                        "Straight took 0.6-0.7x the time on a VM at one speed and 1.05-1.2x at "
                        "another (docs/message-path.md round 21). Valid values: measure, "
                        "always, never",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &cfg->shm_pack_stage);

    cfg->hwloc = true;
    (void) register_var("hwloc",
                        "Size each shared-memory ring from the L2 cache of this process's cores "
                        "and the processes on its node (hwloc): L2 / (2 (n - 1)), 64 KiB .. "
                        "512 KiB; off: 256 KiB",
                        MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, &cfg->hwloc);

    cfg->trace = NULL;
    (void) register_var("trace",
                        "Record every matching-engine call of this job into this directory, "
                        "one rank-R.umt file per rank, for ubermatch-replay (made with its "
                        "parents when missing; one that is not a writable directory stops "
                        "start-up, naming it); empty: off",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_3, &cfg->trace);

    cfg->trace_direct = "auto";
    (void) register_var("trace_direct",
                        "How the matching trace is written. Valid values: auto (through the page "
                        "cache while it takes the trace at memory speed, with direct I/O from the "
                        "point where it does not: a slow copy, or the kernel holding the writer back "
                        "for its write-back), true (direct I/O, O_DIRECT by Linux AIO, where the "
                        "directory's file system takes it), false (always through the page cache). "
                        "Which costs a run less depends on the machine (docs/traces.md)",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &cfg->trace_direct);

    cfg->threading = "global";
    (void) register_var("threading",
                        "How matching is serialised under MPI_THREAD_MULTIPLE. Valid values: "
                        "global (one lock for all of a process's matching), tailq (tail queues: "
                        "the posted-receive and unexpected-message queues each under its own lock, "
                        "so that threads posting receives or probing run while another thread "
                        "matches arrivals; docs/tail-queues.md). Without MPI_THREAD_MULTIPLE "
                        "there is no lock either way",
                        MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &cfg->threading);

    cfg->tailq_bins = 1;
    (void) register_var("tailq_bins",
                        "With threading tailq: split each communicator's tail queues into this "
                        "many bins by (source, tag), so that threads matching different keys take "
                        "no common lock; a wildcard receive takes every bin's lock, and while one "
                        "waits, every call does (docs/tail-queues.md, \"Bins\"). 1 .. 256; 1: no bins",
                        MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &cfg->tailq_bins);

    cfg->max_contextid = 65535; /* ob1's */
    (void) register_var("max_contextid",
                        "Most communicators a process may have at once (their context ids): "
                        "creating one more fails (MPI_ERR_INTERN from Open MPI's communicator "
                        "code), as under ob1, whose limit this default is; pml_ucx's is 1048575. "
                        "Set it the same in every process. 64 .. 4294967294 (the wire's 32 bits)",
                        MCA_BASE_VAR_TYPE_UNSIGNED_INT, OPAL_INFO_LVL_5, &cfg->max_contextid);

    rc = mca_pml_ubermatch_assert_register();
    if (rc < 0) {
        return rc;
    }

    rc = mca_pml_ubermatch_register_coll_hooks();
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = mca_pml_ubermatch_register_am_hooks();
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return mca_pml_ubermatch_register_pvars();
}

static int mca_pml_ubermatch_component_open(void)
{
    mca_pml_ubermatch.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_pml_ubermatch.output, mca_pml_ubermatch.config.verbose);
    return OMPI_SUCCESS;
}

static int mca_pml_ubermatch_component_close(void)
{
    opal_output_close(mca_pml_ubermatch.output);
    return OMPI_SUCCESS;
}

static mca_pml_base_module_t *mca_pml_ubermatch_component_init(int *priority,
                                                               bool enable_progress_threads,
                                                               bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    if (OMPI_SUCCESS != mca_pml_ubermatch_init_module(enable_mpi_threads)) {
        return NULL;
    }
    *priority = mca_pml_ubermatch.config.priority;
    return &mca_pml_ubermatch.super;
}

static int mca_pml_ubermatch_component_fini(void)
{
    return mca_pml_ubermatch_fini_module();
}

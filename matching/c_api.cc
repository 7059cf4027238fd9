// The C interface over the engine, for the PML's C glue. No exception crosses it.
#include <cstring>
#include <sstream>

#include "matching/registry.h"
#include "matching/simd/dispatch.h"
#include "matching/ubermatch_engine.h"

using ubermatch::Engine;

struct um_engine {
    std::unique_ptr<Engine> impl;
};

namespace {

const um_hint_t kNoHint{};

const um_hint_t &hint_or_default(const um_hint_t *hint) { return hint != nullptr ? *hint : kNoHint; }

void set_error(char *err, size_t errlen, const char *msg) {
    if (err != nullptr && errlen > 0) {
        std::strncpy(err, msg, errlen - 1);
        err[errlen - 1] = '\0';
    }
}

const char *const kCollNames[UM_COLL_COUNT] = {
    "p2p",     "barrier",    "bcast",     "reduce",         "allreduce",
    "gather",  "gatherv",    "scatter",   "scatterv",       "allgather",
    "allgatherv", "alltoall", "alltoallv", "alltoallw",     "reduce_scatter",
    "reduce_scatter_block",  "scan",      "exscan",         "neighbor",
    "other_collective",
};

} // namespace

extern "C" {

void um_params_init(um_params_t *params) { *params = ubermatch::default_params(); }

int um_params_check(const um_params_t *params, char *err, size_t errlen) {
    try {
        ubermatch::check_params(params != nullptr ? *params : ubermatch::default_params());
        return UM_OK;
    } catch (const std::exception &e) {
        set_error(err, errlen, e.what());
        return UM_ERR_ARG;
    }
}

um_engine_t *um_engine_create(const char *backend, int32_t comm_size, const um_params_t *params,
                              char *err, size_t errlen) {
    try {
        const um_params_t p = params != nullptr ? *params : ubermatch::default_params();
        auto impl = ubermatch::make_engine(backend != nullptr ? backend : "", comm_size, p);
        return new um_engine{std::move(impl)};
    } catch (const std::exception &e) {
        set_error(err, errlen, e.what());
        return nullptr;
    }
}

void um_engine_destroy(um_engine_t *engine) { delete engine; }

int um_engine_post_recv(um_engine_t *engine, int32_t source, int32_t tag, const um_hint_t *hint,
                        void *request, um_match_t *out) {
    return engine->impl->post_recv(source, tag, hint_or_default(hint), request, out);
}

int um_engine_arrive(um_engine_t *engine, int32_t source, int32_t tag, const um_hint_t *hint,
                     void *message, um_match_t *out) {
    return engine->impl->arrive(source, tag, hint_or_default(hint), message, out);
}

int um_engine_post_recv_batch(um_engine_t *engine, const um_elem_t *elems, size_t n, const um_hint_t *hint,
                              um_match_t *out, size_t *done) {
    return engine->impl->post_recv_batch(elems, n, hint_or_default(hint), out, done);
}

int um_engine_arrive_batch(um_engine_t *engine, const um_elem_t *elems, size_t n, const um_hint_t *hint,
                           um_match_t *out, size_t *done) {
    return engine->impl->arrive_batch(elems, n, hint_or_default(hint), out, done);
}

int um_engine_probe(um_engine_t *engine, int32_t source, int32_t tag, const um_hint_t *hint,
                    um_match_t *out) {
    return engine->impl->probe(source, tag, hint_or_default(hint), out);
}

int um_engine_mprobe(um_engine_t *engine, int32_t source, int32_t tag, const um_hint_t *hint,
                     um_match_t *out) {
    return engine->impl->mprobe(source, tag, hint_or_default(hint), out);
}

int um_engine_cancel(um_engine_t *engine, int32_t source, int32_t tag, void *request, int *removed) {
    bool r = false;
    const int rc = engine->impl->cancel(source, tag, request, &r);
    *removed = r ? 1 : 0;
    return rc;
}

void um_engine_stats(const um_engine_t *engine, um_stats_t *stats) { *stats = engine->impl->stats(); }

const char *um_engine_backend(const um_engine_t *engine) { return engine->impl->name(); }

void um_engine_dump(const um_engine_t *engine, FILE *out) {
    std::ostringstream s;
    engine->impl->dump(s);
    std::fputs(s.str().c_str(), out);
}

size_t um_backend_count(void) { return ubermatch::backends().size(); }

const char *um_backend_name(size_t index) {
    return index < ubermatch::backends().size() ? ubermatch::backends()[index].name : nullptr;
}

const char *um_backend_description(size_t index) {
    return index < ubermatch::backends().size() ? ubermatch::backends()[index].description : nullptr;
}

const char *um_backend_assertion(size_t index) {
    return index < ubermatch::backends().size() ? ubermatch::backends()[index].assertion : nullptr;
}

const char *um_backend_names(void) { return ubermatch::backend_names().c_str(); }

const char *um_status_string(int status) {
    switch (status) {
    case UM_OK: return "success";
    case UM_ERR_SOURCE: return "source rank out of range for the communicator";
    case UM_ERR_TAG: return "a message cannot carry the ANY_TAG wildcard as its tag";
    case UM_ERR_ARG: return "invalid argument (NULL handle)";
    case UM_ERR_ASSERTION:
        return "the operation breaks the engine's assertion (mpi_assert_no_any_source, "
               "mpi_assert_no_any_tag or ubermatch_no_unexpected); nothing was queued";
    case UM_ERR_NOMEM: return "out of memory: the element was not queued";
    default: return "unknown status";
    }
}

const char *um_coll_name(um_coll_t coll) {
    return (coll >= 0 && coll < UM_COLL_COUNT) ? kCollNames[coll] : "invalid";
}

const char *um_kernel_name(um_kernel_t kernel) {
    switch (kernel) {
    case UM_KERNEL_NONE: return "none";
    case UM_KERNEL_SCALAR: return "scalar";
    case UM_KERNEL_AVX2: return "avx2";
    case UM_KERNEL_AVX512: return "avx512";
    }
    return "invalid";
}

const char *um_kernel_names(void) { return ubermatch::simd::kernel_names(); }

int um_kernel_select(const char *request, um_kernel_t *kernel, int *fell_back, char *msg,
                     size_t msglen) {
    try {
        const ubermatch::simd::Selection s = ubermatch::simd::select(request != nullptr ? request : "");
        *kernel = s.kernels->id;
        *fell_back = s.fell_back ? 1 : 0;
        set_error(msg, msglen, s.warning.c_str());
        return UM_OK;
    } catch (const std::exception &e) {
        set_error(msg, msglen, e.what());
        return UM_ERR_ARG;
    }
}

int um_engine_collective_begin(um_engine_t *engine, const um_hint_t *hint) {
    return hint != nullptr ? engine->impl->collective_begin(*hint) : UM_ERR_ARG;
}

int um_engine_collective_end(um_engine_t *engine, const um_hint_t *hint) {
    return hint != nullptr ? engine->impl->collective_end(*hint) : UM_ERR_ARG;
}

} // extern "C"

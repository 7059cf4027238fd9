// The protocol core: the UCX worker, communicators, and the receive-side
// operations the glue calls (post, cancel, probe, collective calls).
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "matching/registry.h"
#include "matching/trace.h"

namespace ubermatch::protocol {

namespace {

// Our choice of a UCX setting (the variable's name without "UCX_"), unless the
// user made one in the environment: UCX_<name>, or a name in `also` that UCX
// reads for the same setting.
void choose_unless_set(ucp_config_t *config, const char *name, const char *value,
                       std::initializer_list<const char *> also = {}) {
    if (std::getenv((std::string("UCX_") + name).c_str()) != nullptr) {
        return;
    }
    for (const char *other : also) {
        if (std::getenv(other) != nullptr) {
            return;
        }
    }
    ucp_config_modify(config, name, value);
}

} // namespace

Protocol::Protocol(const um_proto_config_t &config, const um_proto_callbacks_t &callbacks)
    : backend_(config.backend != nullptr ? config.backend : ""), params_(config.params),
      thread_multiple_(config.thread_multiple != 0),
      tailq_(thread_multiple_ && config.tailq != 0),
      tailq_bins_(config.tailq_bins != 0 ? config.tailq_bins : 1),
      ucx_tls_(config.ucx_tls != nullptr ? config.ucx_tls : ""),
      ucx_rndv_thresh_(config.ucx_rndv_thresh != nullptr ? config.ucx_rndv_thresh : ""),
      cb_(callbacks), fail_alloc_every_(config.fail_alloc_every),
      shm_bound_(config.shm_eager_limit),
      ring_cells_(config.shm_ring_cells != 0 ? config.shm_ring_cells : shm::kDefaultCells),
      shm_limit_(shm::eager_limit(ring_cells_, shm_bound_)),
      shm_pull_(config.shm_pull != 0 && shm_limit_ > 0),
      stage_max_(shm_pull_ ? config.shm_stage_max : 0), stage_way_(config.shm_pack_stage) {
    if (stage_way_ < UM_PROTO_PACK_STAGE_MEASURE || stage_way_ > UM_PROTO_PACK_STAGE_NEVER) {
        throw std::invalid_argument("shm_pack_stage " + std::to_string(stage_way_) +
                                    " is not valid: 0 (measure), 1 (always), 2 (never)");
    }
}

void Protocol::start() {
    // Fail early, with the valid names, on a bad backend or parameter.
    make_engine(backend_, 1, params_);
    // A relaxed backend's refusal of an arrival cannot see the posted inbox.
    for (const Backend &b : backends()) {
        if (tailq_ && backend_ == b.name && b.assertion != nullptr) {
            throw std::runtime_error("tail queues (threading tailq) wrap backends of full MPI matching; " +
                                     backend_ + " needs " + b.assertion + ": use threading global");
        }
    }
    if (tailq_bins_ < 1 || tailq_bins_ > TailBins::kMaxBins) { // checked whatever the thread level
        throw std::runtime_error("tailq_bins = " + std::to_string(tailq_bins_) +
                                 " is out of range; valid values are 1 .. " + std::to_string(TailBins::kMaxBins));
    }
    if (shm_bound_ > shm::max_payload(shm::kDefaultCells)) {
        throw std::runtime_error("shm_eager_limit = " + std::to_string(shm_bound_) +
                                 " is out of range; valid values are 0 .. " +
                                 std::to_string(shm::max_payload(shm::kDefaultCells)));
    }
    if (ring_cells_ < 64 || (ring_cells_ & (ring_cells_ - 1)) != 0 ||
        (shm_limit_ > 0 && shm::max_payload(ring_cells_) < shm_limit_)) {
        throw std::runtime_error("shm_ring_cells = " + std::to_string(ring_cells_) +
                                 " is not a power of two of at least 64 that holds four records of " +
                                 std::to_string(shm_limit_) + " bytes");
    }

    if (shm_pull_) { // without it, packed sends' buffers are allocated and pulled by CMA
        std::string err;
        arena_.reset(new (std::nothrow) shm::Arena(kArenaBytes, err));
        if (arena_ != nullptr && err.empty()) {
            send_buffers_.carve_from(arena_->base(), arena_->bytes(), &shm::Arena::release, arena_.get());
            send_buffers_.rotate_within(kSendRotate, kPullMin); // what a receiver pulls
        } else {
            arena_.reset();
        }
    }

    // A negative rendezvous threshold is refused: UCX would read "-2" as its
    // own "auto" and "-1" as "inf" (its sentinels), a typo taken for a choice.
    if (!ucx_rndv_thresh_.empty() && ucx_rndv_thresh_[0] == '-') {
        throw std::runtime_error("pml_ubermatch_ucx_rndv_thresh = " + ucx_rndv_thresh_ +
                                 " is not a size; valid values: bytes with an optional unit "
                                 "(8k, 64k, 1m), auto or inf");
    }
    ucp_config_t *config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
        throw std::runtime_error(std::string("ucp_config_read: ") + ucs_status_string(status));
    }
    // UCX's own rendezvous threshold for active messages is a few KiB here, and
    // its rendezvous (RTS, get, ATS) costs 6 us at 16 KiB where an eager copy
    // costs 1.4 (docs/message-path.md): unless the user chose (the MCA
    // parameter or UCX_RNDV_THRESH), rendezvous starts at kRndvThresh (64 KiB).
    user_rndv_ = !ucx_rndv_thresh_.empty() || std::getenv("UCX_RNDV_THRESH") != nullptr;
    const std::string rndv = user_rndv_ ? ucx_rndv_thresh_ : kRndvThresh; // empty: UCX reads the environment
    for (const auto &kv : {std::make_pair("TLS", ucx_tls_), std::make_pair("RNDV_THRESH", rndv)}) {
        if (!kv.second.empty()) {
            status = ucp_config_modify(config, kv.first, kv.second.c_str());
            if (status != UCS_OK) {
                ucp_config_release(config);
                throw std::runtime_error(std::string("UCX rejected ") + kv.first + "=" + kv.second +
                                         ": " + ucs_status_string(status));
            }
        }
    }
    // UCX 1.13's automatic rendezvous scheme for active messages gave 0.89-0.96
    // of pml_ucx's bandwidth at 256-512 KiB here; a get by the receiver (what
    // the tag API does between processes of a node) gave 0.98-1.12
    // (docs/message-path.md). Where no get is possible UCX falls back by
    // itself. Unless the user chose.
    choose_unless_set(config, "RNDV_SCHEME", "get_zcopy");
    // UCX's shared-memory transports copy in segments of 8 KiB, a pack or
    // unpack call and a FIFO element each: windows of 1-4 MiB packed by UCX
    // (kUcxPacksMin) moved 1.3-1.6x the bandwidth in segments of 32 KiB,
    // ob1's fragment size, for ~1.5 MB more a process (docs/message-path.md
    // round 23). Unless the user chose.
    choose_unless_set(config, "MM_SEG_SIZE", kMmSegSize, {"UCX_POSIX_SEG_SIZE", "UCX_SYSV_SEG_SIZE"});
    // Threads waiting in progress starve a sending thread of UCX's default
    // spinlock (seen over TCP, where progress holds it through a system call):
    // ask for its mutex, unless the user chose.
    if (thread_multiple_) {
        choose_unless_set(config, "USE_MT_MUTEX", "y");
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_AM;
    params.mt_workers_shared = 0;
    status = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (status != UCS_OK) {
        throw std::runtime_error(std::string("ucp_init: ") + ucs_status_string(status));
    }
    if (ucp_dt_create_generic(&kRndvUnpackOps, this, &rndv_unpack_dt_) != UCS_OK) {
        rndv_unpack_dt_ = 0; // non-contiguous rendezvous receives go through scratch memory
    }
    if (ucp_dt_create_generic(&kSendPackOps, this, &send_pack_dt_) != UCS_OK) {
        send_pack_dt_ = 0; // packed sends through UCX are packed whole first
    }

    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = thread_multiple_ ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(context_, &wparams, &worker_);
    if (status != UCS_OK) {
        throw std::runtime_error(std::string("ucp_worker_create: ") + ucs_status_string(status));
    }
    if (thread_multiple_) {
        ucp_worker_attr_t attr{};
        attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
        if (ucp_worker_query(worker_, &attr) != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI) {
            throw std::runtime_error("this UCX build gives no thread-safe worker (MPI_THREAD_MULTIPLE)");
        }
    }

    const struct {
        unsigned id;
        ucp_am_recv_callback_t cb;
    } handlers[] = {{kAmMessage, am_message_cb},
                    {kAmAck, am_ack_cb},
                    {kAmShmOffer, am_shm_offer_cb},
                    {kAmShmReply, am_shm_reply_cb}};
    for (const auto &h : handlers) {
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id = h.id;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        hp.cb = h.cb;
        hp.arg = this;
        status = ucp_worker_set_am_recv_handler(worker_, &hp);
        if (status != UCS_OK) {
            throw std::runtime_error(std::string("ucp_worker_set_am_recv_handler: ") +
                                     ucs_status_string(status));
        }
    }
}

Protocol::~Protocol() {
    for (Comm *c : comms_) {
        if (c != nullptr) {
            comm_destroy(c);
        }
    }
    for (auto &entry : unknown_comm_) {
        for (Message *m : entry.second) {
            free_message(m);
        }
    }
    if (worker_ != nullptr) {
        ucp_worker_destroy(worker_);
    }
    if (rndv_unpack_dt_ != 0) {
        ucp_dt_destroy(rndv_unpack_dt_);
    }
    if (send_pack_dt_ != 0) {
        ucp_dt_destroy(send_pack_dt_);
    }
    if (context_ != nullptr) {
        ucp_cleanup(context_);
    }
}

// One thread progresses at a time: the others would only queue on the
// worker's lock, ahead of threads that want it to send. A thread that finds
// another progressing gives its core away: spinning, waiting threads took the
// cores the progressing one needed (MPICH's threads/pt2pt `threads`, 2 ranks
// of 4 threads on 2 cores, timed out at 180 s where ob1 had just passed in 21 s).
// The thread inside the gate knows it (tls_gate): settle_sends must not wait
// for itself (a callback of the round may send), and the gate's descriptors
// are its alone.
thread_local const Protocol *Protocol::tls_gate = nullptr;

int Protocol::progress_shared() {
    if (progressing_.exchange(true, std::memory_order_acquire)) {
        std::this_thread::yield();
        return 0;
    }
    tls_gate = this;
    const int events = poll_rings_then_ucx(); // inside the gate: one thread at a time
    tls_gate = nullptr;
    if (UM_UNLIKELY(messages_.dipped())) {
        top_up_reserve(); // takes the core's lock, which matching threads hold
    }
    progressing_.store(false, std::memory_order_release);
    return events;
}

int Protocol::settle_sends() noexcept {
    if (thread_multiple_) {
        if (in_gate()) {
            return 0; // called from this thread's own round: it reaps after
        }
        while (progressing_.exchange(true, std::memory_order_acquire)) {
            std::this_thread::yield();
        }
    }
    int n = reap_pulls();
    n += static_cast<int>(ucp_worker_progress(worker_));
    if (thread_multiple_) {
        progressing_.store(false, std::memory_order_release);
    }
    return n;
}

// The reserve stands in for failed allocations inside UCX's callbacks, where
// an arrival cannot wait; refilled here, it covers each burst anew, so that
// only memory exhausted for a whole burst drops a message (counted).
void Protocol::top_up_reserve() noexcept {
    Guard guard(*this); // inject_failure()'s count is under lock_
    Guard pool(pool_lock());
    while (messages_.short_of_reserve() && messages_.add_reserve(inject_failure())) {
    }
    messages_.topped_up();
}

// --- communicators ---------------------------------------------------------

Comm *Protocol::comm_create(uint32_t cid, int32_t local_rank, int32_t remote_size,
                            const std::string &backend) {
    auto comm = std::make_unique<Comm>();
    comm->cid = cid;
    comm->local_rank = local_rank;
    comm->remote_size = remote_size;
    choose_matching(*comm, backend.empty() ? backend_ : backend);
    comm->send_seq.assign(static_cast<size_t>(remote_size), 0);
    comm->recv_seq.assign(static_cast<size_t>(remote_size), 0);

    Actions actions;
    Comm *c = comm.release();
    {
        Guard guard(*this);
        if (cid >= comms_.size()) {
            comms_.resize(std::max<size_t>(cid + 1, comms_.size() * 2), nullptr);
        }
        comms_[cid] = c;
        auto it = unknown_comm_.find(cid);
        if (it != unknown_comm_.end()) {
            held_ -= it->second.size();
            for (Message *m : it->second) { // in arrival order
                accept_held(*c, m, actions);
            }
            unknown_comm_.erase(it);
        }
    }
    run(actions);
    return c;
}

void Protocol::comm_destroy(Comm *comm) {
    std::vector<Message *> gone;
    {
        Guard guard(*this);
        if (comm->cid < comms_.size() && comms_[comm->cid] == comm) {
            comms_[comm->cid] = nullptr;
        }
        auto take_unexpected = [&gone](const Snapshot &snap) {
            for (const QueuedElement &q : snap.unexpected) {
                gone.push_back(static_cast<Message *>(q.handle));
            }
        };
        if (comm->tailq) {
            take_unexpected(comm->tailq->snapshot());
        }
        for (Engine *e : {comm->engine.get(), comm->coll.get()}) {
            if (e != nullptr) {
                take_unexpected(e->snapshot());
            }
        }
        for (auto &entry : comm->early) {
            if (entry.second != nullptr) { // else a marker (arrival.cc)
                gone.push_back(entry.second);
                --held_;
            }
        }
    }
    for (Message *m : gone) {
        free_message(m);
    }
    delete comm;
}

void Protocol::comm_hook(Comm *comm, um_proto_arrival_fn fn, void *arg) {
    Guard guard(*this);
    comm->arrival_hook = fn;
    comm->arrival_arg = arg;
}

um_stats_t Protocol::comm_stats(Comm *comm) {
    Guard guard(match_lock(*comm));
    if (comm->tailq) {
        return comm->tailq->stats();
    }
    um_stats_t s = comm->engine->stats();
    if (comm->coll != nullptr) { // collective traffic apart (relaxed.cc): add it
        add_stats(s, comm->coll->stats());
    }
    return s;
}

void Protocol::comm_dump(Comm *comm, FILE *out) {
    std::ostringstream s;
    {
        Guard guard(*this);
        s << "communicator " << comm->cid << ", rank " << comm->local_rank << ", peers "
          << comm->remote_size << ", held out of sequence "
          << std::count_if(comm->early.begin(), comm->early.end(),
                           [](const auto &e) { return e.second != nullptr; })
          << "\n";
        if (comm->tailq) {
            comm->tailq->dump(s);
        } else {
            comm->engine->dump(s);
            if (comm->coll != nullptr) {
                s << "Open MPI's own traffic (negative tags), apart:\n";
                comm->coll->dump(s);
            }
        }
    }
    std::fputs(s.str().c_str(), out);
}

um_proto_faults_t Protocol::faults() {
    Guard guard(*this);
    Guard pool(pool_lock());
    return {lost_, dropped_, messages_.reserve_used()};
}

size_t Protocol::held() {
    Guard guard(*this);
    return held_;
}

// A receive matches at most one message: no Actions to gather (most receives
// are posted ahead and match none).
namespace {
// An engine's status as the protocol's: a refusal of the communicator's
// assertions stays one (the glue names the assertion), the rest are errors.
int proto_status(int rc) {
    return rc == UM_OK ? UM_PROTO_OK : rc == UM_ERR_ASSERTION ? UM_PROTO_ASSERTION : UM_PROTO_ERROR;
}
} // namespace

int Protocol::recv(Comm *comm, um_proto_recv_t *recv) {
    um_match_t match{};
    int rc;
    {
        Guard guard(match_lock(*comm));
        rc = comm->post_recv(recv, &match);
    }
    if (UM_UNLIKELY(rc != UM_OK)) {
        return proto_status(rc);
    }
    if (match.handle != nullptr) {
        matched(recv, static_cast<Message *>(match.handle));
    }
    return UM_PROTO_OK;
}

// Receives posted together (MPI_Startall): each run of one engine and one
// hint goes to the engine as one batch under one lock (engine.h,
// post_recv_batch); what matched is delivered after it, as recv() does.
int Protocol::recv_batch(Comm *comm, um_proto_recv_t *const *recvs, size_t n, size_t *done) {
    constexpr size_t kRun = 64;
    um_elem_t elems[kRun];
    um_match_t out[kRun];
    size_t pos = 0;
    int rc = UM_OK;
    while (pos < n && rc == UM_OK) {
        size_t ran = 0;
        {
            Guard guard(match_lock(*comm));
            if (comm->tailq) { // tail queues: one at a time
                try {
                    rc = comm->post_recv(recvs[pos], &out[0]);
                } catch (const std::bad_alloc &) {
                    rc = UM_ERR_NOMEM; // as the engine's batch reports it: nothing queued
                }
                ran = rc == UM_OK ? 1 : 0;
            } else {
                Engine &engine = comm->engine_for(recvs[pos]->tag);
                const um_hint_t &hint = recvs[pos]->hint;
                size_t len = 0;
                for (; len < kRun && pos + len < n; ++len) {
                    const um_proto_recv_t &r = *recvs[pos + len];
                    if (&comm->engine_for(r.tag) != &engine || std::memcmp(&r.hint, &hint, sizeof hint) != 0) {
                        break;
                    }
                    elems[len] = {recvs[pos + len], r.source, r.tag};
                }
                rc = engine.post_recv_batch(elems, len, hint, out, &ran);
            }
        }
        for (size_t i = 0; i < ran; ++i) {
            if (out[i].handle != nullptr) {
                matched(recvs[pos + i], static_cast<Message *>(out[i].handle));
            }
        }
        pos += ran;
    }
    *done = pos;
    return proto_status(rc);
}

int Protocol::cancel(Comm *comm, um_proto_recv_t *recv, bool *cancelled) {
    Guard guard(match_lock(*comm));
    return comm->cancel(recv, cancelled) == UM_OK ? UM_PROTO_OK : UM_PROTO_ERROR;
}

namespace {
void read_info(void *msg, void *info) {
    const Message &m = *static_cast<const Message *>(msg);
    *static_cast<um_proto_msg_info_t *>(info) = {m.hdr.source, m.hdr.tag, m.length};
}
} // namespace

int Protocol::probe(Comm *comm, int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                    Message **found, um_proto_msg_info_t *info) {
    Actions actions;
    {
        Guard guard(match_lock(*comm));
        um_match_t match{};
        int rc;
        if (comm->tailq) {
            rc = remove ? comm->tailq->mprobe(source, tag, hint, &match)
                        : comm->tailq->probe(source, tag, hint, &match, read_info, info);
        } else {
            Engine &engine = comm->engine_for(tag);
            rc = remove ? engine.mprobe(source, tag, hint, &match) : engine.probe(source, tag, hint, &match);
        }
        if (rc != UM_OK) {
            return proto_status(rc);
        }
        *found = static_cast<Message *>(match.handle);
        if (*found != nullptr && (remove || !comm->tailq)) {
            read_info(*found, info); // ours (removed), or under the lock
        }
        if (remove && *found != nullptr) {
            actions.add(nullptr, *found); // matched now: acknowledge a synchronous send
        }
    }
    run(actions);
    return UM_PROTO_OK;
}

void Protocol::msg_recv(Message *msg, um_proto_recv_t *recv) { deliver(recv, msg); }

int Protocol::collective(Comm *comm, const um_hint_t &hint, bool begin) {
    Guard guard(match_lock(*comm));
    return comm->collective(hint, begin) == UM_OK ? UM_PROTO_OK : UM_PROTO_ERROR;
}

} // namespace ubermatch::protocol

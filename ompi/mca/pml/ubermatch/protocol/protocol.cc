#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "matching/registry.h"
#include "matching/trace.h"

namespace ubermatch::protocol {

namespace {

uint64_t early_key(int32_t source, uint32_t seq) {
    return (uint64_t{static_cast<uint32_t>(source)} << 32) | seq;
}

// A rendezvous receive in flight.
struct RndvOp {
    Protocol *proto;
    um_proto_recv_t *recv;
    Message *msg;
    void *scratch; // the data lands here when the receive cannot take it directly
};

// An acknowledgement in flight: UCX reads the header until the send completes.
struct AckOp {
    uint64_t sender;
};

} // namespace

Protocol::Protocol(const um_proto_config_t &config, const um_proto_callbacks_t &callbacks)
    : backend_(config.backend != nullptr ? config.backend : ""), params_(config.params),
      thread_multiple_(config.thread_multiple != 0),
      ucx_tls_(config.ucx_tls != nullptr ? config.ucx_tls : ""),
      ucx_rndv_thresh_(config.ucx_rndv_thresh != nullptr ? config.ucx_rndv_thresh : ""),
      cb_(callbacks) {}

void Protocol::start() {
    // Fail early, with the valid names, on a bad backend or parameter.
    make_engine(backend_, 1, params_);

    ucp_config_t *config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
        throw std::runtime_error(std::string("ucp_config_read: ") + ucs_status_string(status));
    }
    for (const auto &kv : {std::make_pair("TLS", ucx_tls_), std::make_pair("RNDV_THRESH", ucx_rndv_thresh_)}) {
        if (!kv.second.empty()) {
            status = ucp_config_modify(config, kv.first, kv.second.c_str());
            if (status != UCS_OK) {
                ucp_config_release(config);
                throw std::runtime_error(std::string("UCX rejected ") + kv.first + "=" + kv.second +
                                         ": " + ucs_status_string(status));
            }
        }
    }
    // Threads waiting in progress starve a sending thread of UCX's default
    // spinlock (seen over TCP, where progress holds it through a system call):
    // ask for its mutex, unless the user chose.
    if (thread_multiple_ && std::getenv("UCX_USE_MT_MUTEX") == nullptr) {
        ucp_config_modify(config, "USE_MT_MUTEX", "y");
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
    } handlers[] = {{kAmMessage, am_message_cb}, {kAmAck, am_ack_cb}};
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
    if (context_ != nullptr) {
        ucp_cleanup(context_);
    }
}

int Protocol::progress() {
    if (!thread_multiple_) {
        return static_cast<int>(ucp_worker_progress(worker_));
    }
    // One thread progresses at a time: the others would only queue on the
    // worker's lock, ahead of threads that want it to send.
    if (progressing_.exchange(true, std::memory_order_acquire)) {
        return 0;
    }
    const int events = static_cast<int>(ucp_worker_progress(worker_));
    progressing_.store(false, std::memory_order_release);
    return events;
}

ucp_ep_h Protocol::connect(const void *address, size_t length, std::string &err) {
    (void)length;
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = static_cast<const ucp_address_t *>(address);
    ucp_ep_h ep = nullptr;
    const ucs_status_t status = ucp_ep_create(worker_, &ep_params, &ep);
    if (status != UCS_OK) {
        err = std::string("ucp_ep_create: ") + ucs_status_string(status);
        return nullptr;
    }
    return ep;
}

void Protocol::disconnect(ucp_ep_h *eps, size_t count) {
    std::vector<void *> pending;
    for (size_t i = 0; i < count; ++i) {
        if (eps[i] == nullptr) {
            continue;
        }
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = 0; // flush what is in flight, then close
        void *req = ucp_ep_close_nbx(eps[i], &param);
        if (UCS_PTR_IS_PTR(req)) {
            pending.push_back(req);
        }
    }
    for (void *req : pending) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker_);
        }
        ucp_request_free(req);
    }
}

// --- communicators ---------------------------------------------------------

Comm *Protocol::comm_create(uint32_t cid, int32_t local_rank, int32_t remote_size) {
    auto comm = std::make_unique<Comm>();
    comm->cid = cid;
    comm->local_rank = local_rank;
    comm->remote_size = remote_size;
    comm->engine = trace::record(make_engine(backend_, remote_size, params_), cid, local_rank);
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
                accept(*c, m, actions);
            }
            unknown_comm_.erase(it);
        }
    }
    run(actions);
    return c;
}

void Protocol::comm_destroy(Comm *comm) {
    std::vector<Message *> drop;
    {
        Guard guard(*this);
        if (comm->cid < comms_.size() && comms_[comm->cid] == comm) {
            comms_[comm->cid] = nullptr;
        }
        for (const QueuedElement &e : comm->engine->snapshot().unexpected) {
            drop.push_back(static_cast<Message *>(e.handle));
        }
        for (auto &entry : comm->early) {
            drop.push_back(entry.second);
        }
        held_ -= comm->early.size();
    }
    for (Message *m : drop) {
        free_message(m);
    }
    delete comm;
}

um_stats_t Protocol::comm_stats(Comm *comm) {
    Guard guard(*this);
    return comm->engine->stats();
}

void Protocol::comm_dump(Comm *comm, FILE *out) {
    std::ostringstream s;
    {
        Guard guard(*this);
        s << "communicator " << comm->cid << ", rank " << comm->local_rank << ", peers "
          << comm->remote_size << ", held out of sequence " << comm->early.size() << "\n";
        comm->engine->dump(s);
    }
    std::fputs(s.str().c_str(), out);
}

size_t Protocol::held() {
    Guard guard(*this);
    return held_;
}

// --- arrivals ----------------------------------------------------------------

ucs_status_t Protocol::am_message_cb(void *arg, const void *header, size_t header_length,
                                     void *data, size_t length, const ucp_am_recv_param_t *param) {
    if (header_length != sizeof(WireHeader) && header_length != kShortHeader) {
        return UCS_OK; // not ours: drop
    }
    WireHeader hdr{};
    std::memcpy(&hdr, header, header_length);
    return static_cast<Protocol *>(arg)->on_message(hdr, data, length, param);
}

ucs_status_t Protocol::on_message(const WireHeader &hdr, void *data, size_t length,
                                  const ucp_am_recv_param_t *param) {
    Actions actions;
    bool kept;
    Message *msg;
    {
        Guard guard(*this);
        msg = messages_.get();
        msg->hdr = hdr;
        msg->length = length;
        msg->data = data;
        msg->reply_ep = nullptr;
        msg->rndv = false;
        msg->stored = false;
        msg->rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
        if ((hdr.flags & kFlagSync) && (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
            msg->reply_ep = param->reply_ep;
        }
        Comm *comm = find_comm(hdr.cid);
        if (comm != nullptr) {
            kept = accept(*comm, msg, actions);
        } else {
            store(msg);
            unknown_comm_[hdr.cid].push_back(msg);
            ++held_;
            kept = true;
        }
    }
    // Deliveries of this very message read UCX's data: it is valid until we return.
    run(actions);
    return (kept && msg->rndv) ? UCS_INPROGRESS : UCS_OK;
}

bool Protocol::accept(Comm &comm, Message *msg, Actions &actions) {
    const int32_t src = msg->hdr.source;
    if (src < 0 || src >= comm.remote_size) {
        return false; // not a member: a corrupt or stray message
    }
    uint32_t &expected = comm.recv_seq[static_cast<size_t>(src)];
    if (msg->hdr.seq != expected) {
        store(msg);
        comm.early.emplace(early_key(src, msg->hdr.seq), msg);
        ++held_;
        return true;
    }
    const bool kept = arrive(comm, msg, actions);
    ++expected;
    // Release the arrivals that waited for this one.
    while (!comm.early.empty()) {
        auto it = comm.early.find(early_key(src, expected));
        if (it == comm.early.end()) {
            break;
        }
        Message *next = it->second;
        comm.early.erase(it);
        --held_;
        arrive(comm, next, actions);
        ++expected;
    }
    return kept;
}

bool Protocol::arrive(Comm &comm, Message *msg, Actions &actions) {
    um_hint_t hint{};
    hint.coll = msg->hdr.coll;
    hint.msg_size = static_cast<uint32_t>(std::min<size_t>(msg->length, UINT32_MAX));
    hint.comm_size = static_cast<uint32_t>(comm.remote_size);
    um_match_t match{};
    comm.engine->arrive(msg->hdr.source, msg->hdr.tag, hint, msg, &match);
    if (match.handle != nullptr) {
        actions.add(static_cast<um_proto_recv_t *>(match.handle), msg);
        return false;
    }
    store(msg);
    return true;
}

void Protocol::store(Message *msg) {
    if (msg->rndv || msg->stored) {
        return; // a rendezvous descriptor stays with UCX until received
    }
    void *copy = msg->inline_data;
    if (msg->length > sizeof msg->inline_data) {
        copy = std::malloc(msg->length);
        if (copy == nullptr) {
            throw std::bad_alloc();
        }
    }
    std::memcpy(copy, msg->data, msg->length);
    msg->data = copy;
    msg->stored = true;
}

// --- delivery ------------------------------------------------------------------

void Protocol::run(Actions &actions) {
    actions.for_each([this](const Actions::Item &it) {
        acknowledge(*it.msg);
        if (it.recv != nullptr) {
            deliver(it.recv, it.msg);
        }
    });
}

void Protocol::acknowledge(const Message &msg) {
    if (!(msg.hdr.flags & kFlagSync) || msg.reply_ep == nullptr) {
        return;
    }
    auto *ack = new AckOp{msg.hdr.sender};
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = ack_sent_cb;
    param.user_data = ack;
    void *req = ucp_am_send_nbx(msg.reply_ep, kAmAck, &ack->sender, sizeof ack->sender, nullptr, 0,
                                &param);
    if (!UCS_PTR_IS_PTR(req)) {
        delete ack; // done at once, or failed (the sender then waits: nothing better to do)
    }
}

void Protocol::ack_sent_cb(void *request, ucs_status_t, void *user_data) {
    delete static_cast<AckOp *>(user_data);
    ucp_request_free(request);
}

void Protocol::copy_out(um_proto_recv_t *recv, const void *data, size_t n) {
    if (n == 0) {
        return;
    }
    if (recv->buffer != nullptr) {
        std::memcpy(recv->buffer, data, n);
    } else {
        cb_.recv_unpack(recv->cookie, data, n);
    }
}

void Protocol::finish_recv(um_proto_recv_t *recv, const Message &msg) {
    const size_t n = std::min(msg.length, recv->capacity);
    cb_.recv_done(recv->cookie, msg.hdr.source, msg.hdr.tag, n, msg.length,
                  msg.length > recv->capacity ? UM_PROTO_TRUNCATED : UM_PROTO_OK);
}

void Protocol::deliver(um_proto_recv_t *recv, Message *msg) {
    if (!msg->rndv) {
        copy_out(recv, msg->data, std::min(msg->length, recv->capacity));
        const Message done = *msg;
        free_message(msg);
        finish_recv(recv, done);
        return;
    }
    // Rendezvous: straight into a contiguous buffer that can take it all,
    // else into scratch memory (non-contiguous, or truncated: UCX would abort
    // on a receive smaller than the message).
    auto *op = new RndvOp{this, recv, msg, nullptr};
    void *dest = recv->buffer;
    if (dest == nullptr || msg->length > recv->capacity) {
        op->scratch = std::malloc(std::max<size_t>(msg->length, 1));
        if (op->scratch == nullptr) {
            throw std::bad_alloc();
        }
        dest = op->scratch;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = rndv_cb;
    param.user_data = op;
    void *req = ucp_am_recv_data_nbx(worker_, msg->data, dest, msg->length, &param);
    if (!UCS_PTR_IS_PTR(req)) {
        rndv_cb(nullptr, UCS_PTR_STATUS(req), msg->length, op);
    }
}

void Protocol::rndv_cb(void *request, ucs_status_t status, size_t, void *user_data) {
    auto *op = static_cast<RndvOp *>(user_data);
    Protocol *self = op->proto;
    const Message msg = *op->msg;
    self->recycle(op->msg); // UCX took the descriptor with the receive
    if (op->scratch != nullptr) {
        if (status == UCS_OK) {
            self->copy_out(op->recv, op->scratch, std::min(msg.length, op->recv->capacity));
        }
        std::free(op->scratch);
    }
    if (request != nullptr) {
        ucp_request_free(request);
    }
    um_proto_recv_t *recv = op->recv;
    delete op;
    if (status != UCS_OK) {
        self->cb_.recv_done(recv->cookie, msg.hdr.source, msg.hdr.tag, 0, msg.length,
                            UM_PROTO_ERROR);
        return;
    }
    self->finish_recv(recv, msg);
}

void Protocol::free_message(Message *msg) {
    if (msg->rndv) {
        ucp_am_data_release(worker_, msg->data);
    } else if (msg->on_heap()) {
        std::free(msg->data);
    }
    recycle(msg);
}

void Protocol::recycle(Message *msg) {
    Guard guard(*this);
    messages_.put(msg);
}

// --- operations from the glue ----------------------------------------------------

int Protocol::send(Comm *comm, ucp_ep_h ep, int32_t dst, int32_t tag, const um_hint_t &hint,
                   const void *data, size_t length, bool sync, SendOp *op, void *cookie) {
    if (dst < 0 || dst >= comm->remote_size) {
        return UM_PROTO_ERROR;
    }
    op->owner = this;
    op->cookie = cookie;
    op->pending = sync ? 2 : 1;
    op->status = UM_PROTO_OK;
    op->hdr = WireHeader{comm->cid, comm->local_rank, tag, 0, hint.coll,
                         static_cast<uint16_t>(sync ? kFlagSync : 0), 0,
                         reinterpret_cast<uint64_t>(op)};
    {
        Guard guard(*this);
        op->hdr.seq = comm->send_seq[static_cast<size_t>(dst)]++;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send = send_cb;
    param.user_data = op;
    param.flags = sync ? UCP_AM_SEND_FLAG_REPLY : 0;
    void *req = ucp_am_send_nbx(ep, kAmMessage, &op->hdr, header_length(sync, hint), data, length,
                                &param);
    if (UCS_PTR_IS_PTR(req)) {
        return UM_PROTO_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        op->pending = 1; // no acknowledgement can come: finish with the error
        send_event(op, UM_PROTO_ERROR);
        return UM_PROTO_OK;
    }
    send_event(op, UM_PROTO_OK);
    return UM_PROTO_OK;
}

bool Protocol::send_now(Comm *comm, ucp_ep_h ep, int32_t dst, int32_t tag, const um_hint_t &hint,
                        const void *data, size_t length) {
    if (thread_multiple_ || dst < 0 || dst >= comm->remote_size) {
        return false;
    }
    uint32_t &seq = comm->send_seq[static_cast<size_t>(dst)];
    // UCX copies the header before an immediate completion: the stack will do.
    const WireHeader hdr{comm->cid, comm->local_rank, tag, seq, hint.coll, 0, 0, 0};
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    void *req = ucp_am_send_nbx(ep, kAmMessage, &hdr, header_length(false, hint), data, length,
                                &param);
    if (req != nullptr) {
        return false; // UCS_ERR_NO_RESOURCE (not short, or the FIFO is full) or an error
    }
    ++seq;
    return true;
}

void Protocol::send_cb(void *request, ucs_status_t status, void *user_data) {
    auto *op = static_cast<SendOp *>(user_data);
    ucp_request_free(request);
    if (status != UCS_OK && (op->hdr.flags & kFlagSync)) {
        // The acknowledgement will not come.
        op->owner->send_event(op, UM_PROTO_ERROR);
    }
    op->owner->send_event(op, status == UCS_OK ? UM_PROTO_OK : UM_PROTO_ERROR);
}

void Protocol::send_event(SendOp *op, int status) {
    int left;
    if (thread_multiple_) {
        if (status != UM_PROTO_OK) {
            __atomic_store_n(&op->status, status, __ATOMIC_RELAXED);
        }
        left = __atomic_sub_fetch(&op->pending, 1, __ATOMIC_ACQ_REL);
    } else {
        if (status != UM_PROTO_OK) {
            op->status = status;
        }
        left = --op->pending;
    }
    if (left == 0) {
        cb_.send_done(op->cookie, op->status);
    }
}

ucs_status_t Protocol::am_ack_cb(void *arg, const void *header, size_t header_length, void *,
                                 size_t, const ucp_am_recv_param_t *) {
    if (header_length != sizeof(uint64_t)) {
        return UCS_OK;
    }
    uint64_t sender;
    std::memcpy(&sender, header, sizeof sender);
    static_cast<Protocol *>(arg)->send_event(reinterpret_cast<SendOp *>(sender), UM_PROTO_OK);
    return UCS_OK;
}

int Protocol::recv(Comm *comm, um_proto_recv_t *recv) {
    Actions actions;
    {
        Guard guard(*this);
        um_match_t match{};
        if (comm->engine->post_recv(recv->source, recv->tag, recv->hint, recv, &match) != UM_OK) {
            return UM_PROTO_ERROR;
        }
        if (match.handle != nullptr) {
            actions.add(recv, static_cast<Message *>(match.handle));
        }
    }
    run(actions);
    return UM_PROTO_OK;
}

int Protocol::cancel(Comm *comm, um_proto_recv_t *recv, bool *cancelled) {
    Guard guard(*this);
    return comm->engine->cancel(recv->source, recv->tag, recv, cancelled) == UM_OK ? UM_PROTO_OK
                                                                                 : UM_PROTO_ERROR;
}

int Protocol::probe(Comm *comm, int32_t source, int32_t tag, const um_hint_t &hint, bool remove,
                    Message **found) {
    Actions actions;
    {
        Guard guard(*this);
        um_match_t match{};
        const int rc = remove ? comm->engine->mprobe(source, tag, hint, &match)
                              : comm->engine->probe(source, tag, hint, &match);
        if (rc != UM_OK) {
            return UM_PROTO_ERROR;
        }
        *found = static_cast<Message *>(match.handle);
        if (remove && *found != nullptr) {
            actions.add(nullptr, *found); // matched now: acknowledge a synchronous send
        }
    }
    run(actions);
    return UM_PROTO_OK;
}

void Protocol::msg_recv(Message *msg, um_proto_recv_t *recv) { deliver(recv, msg); }

int Protocol::collective(Comm *comm, const um_hint_t &hint, bool begin) {
    Guard guard(*this);
    const int rc = begin ? comm->engine->collective_begin(hint) : comm->engine->collective_end(hint);
    return rc == UM_OK ? UM_PROTO_OK : UM_PROTO_ERROR;
}

} // namespace ubermatch::protocol

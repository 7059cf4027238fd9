// Peers: UCX endpoints and, towards processes of the same node, the
// shared-memory rings of shm.h (offered by the sender, mapped and polled by
// the receiver). Nothing here may throw into UCX.
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include <unistd.h>

namespace ubermatch::protocol {

namespace {

// A reply or offer in flight: UCX reads the header until the send completes.
template <typename H>
struct Pending {
    H header;
};

template <typename H>
void pending_done(void *request, ucs_status_t, void *user_data) {
    ucp_request_free(request);
    delete static_cast<Pending<H> *>(user_data);
}

// Sends a small control message; false when it could not be sent (no memory
// or a UCX error), which leaves the peer to UCX alone.
template <typename H>
bool send_control(ucp_ep_h ep, unsigned id, const H &header, uint32_t flags) {
    auto *p = new (std::nothrow) Pending<H>{header};
    if (p == nullptr) {
        return false;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send = pending_done<H>;
    param.user_data = p;
    param.flags = flags;
    void *req = ucp_am_send_nbx(ep, id, &p->header, sizeof p->header, nullptr, 0, &param);
    if (UCS_PTR_IS_PTR(req)) {
        return true;
    }
    delete p;
    return !UCS_PTR_IS_ERR(req);
}

// A lane of UCX's that copies between two processes' memory once (a rendezvous
// get): Linux CMA, KNEM or XPMEM.
bool single_copy(const std::string &transports) {
    for (const char *t : {"cma/", "knem/", "xpmem/"}) {
        if (transports.find(t) != std::string::npos) {
            return true;
        }
    }
    return false;
}

} // namespace

Peer *Protocol::connect(const void *address, size_t length, bool local, std::string &err) {
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
    try {
        auto peer = std::make_unique<Peer>();
        peer->ep = ep;
        peer->ring = nullptr;
        peer->id = static_cast<uint32_t>(peers_.size());
        peer->shm = (local && shm_limit_ > 0) ? Peer::kWanted : Peer::kNoRing;
        peer->single_copy_rndv = local && !user_rndv_ && single_copy(transports(*peer));
        peer->local = local;
        peers_.push_back(std::move(peer));
        return peers_.back().get();
    } catch (const std::bad_alloc &) {
        err = "no memory for a peer";
        ucp_ep_destroy(ep);
        return nullptr;
    }
}

void Protocol::disconnect(Peer **peers, size_t count) {
    std::vector<void *> pending;
    for (size_t i = 0; i < count; ++i) {
        Peer *peer = peers[i];
        if (peer == nullptr || peer->ep == nullptr) {
            continue;
        }
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = 0; // flush what is in flight, then close
        void *req = ucp_ep_close_nbx(peer->ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            pending.push_back(req);
        }
        peer->ep = nullptr;
        // The ring stays mapped (and the Peer alive) until the end: a reply
        // may still name it, and the receiver may still be reading.
        Guard ring(ring_lock(*peer));
        peer->shm = Peer::kNoRing;
        peer->ring = nullptr;
        peer->pull = false;
    }
    for (void *req : pending) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker_);
        }
        ucp_request_free(req);
    }
}

// First small message to a peer of this node: make a ring and offer it. The
// message itself, and the next ones until the reply, go through UCX.
// With threads: called by one sender, without the peer's ring lock (the reply
// is handled inside UCX's lock and takes the ring lock: never the other way).
void Protocol::offer(Peer &peer) noexcept {
    std::string err;
    std::unique_ptr<shm::Sender> ring(new (std::nothrow) shm::Sender(ring_cells_, err));
    if (ring == nullptr || !err.empty() || ring->name().size() >= sizeof(ShmOffer::name)) {
        Guard lock(ring_lock(peer));
        peer.shm = Peer::kNoRing; // no shared memory here (e.g. /dev/shm full): UCX carries everything
        return;
    }
    ShmOffer o{};
    o.peer = peer.id;
    o.cells = ring_cells_;
    o.pid = static_cast<int32_t>(getpid());
    o.segment = reinterpret_cast<uint64_t>(ring->segment());
    std::memcpy(o.name, ring->name().c_str(), ring->name().size() + 1);
    {
        // Before the offer goes: with threads its reply may come at once.
        Guard lock(ring_lock(peer));
        peer.offered = std::move(ring);
        peer.shm = Peer::kOffered;
    }
    if (!send_control(peer.ep, kAmShmOffer, o, UCP_AM_SEND_FLAG_REPLY)) {
        Guard lock(ring_lock(peer));
        peer.shm = Peer::kNoRing;
        peer.offered.reset();
    }
}

ucs_status_t Protocol::am_shm_offer_cb(void *arg, const void *header, size_t header_length, void *,
                                       size_t, const ucp_am_recv_param_t *param) {
    if (header_length != sizeof(ShmOffer) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    ShmOffer o;
    std::memcpy(&o, header, sizeof o);
    static_cast<Protocol *>(arg)->map_ring(o, param->reply_ep);
    return UCS_OK;
}

void Protocol::map_ring(const ShmOffer &o, ucp_ep_h reply_ep) noexcept {
    ShmReply reply{o.peer, 0, 0, 0};
    // Called from progress (with threads: inside its gate, where the rings are polled).
    if (std::memchr(o.name, '\0', sizeof o.name) != nullptr) {
        std::string err;
        std::unique_ptr<shm::Receiver> ring(new (std::nothrow) shm::Receiver(o.name, err));
        if (ring != nullptr && err.empty()) {
            const bool pull = ring->enable_pull(o.pid, o.segment);
            try {
                hot_.reserve(inbound_.size() + 1);
                cold_.reserve(inbound_.size() + 1);
                inbound_.push_back(std::move(ring));
                hot_.push_back(inbound_.back().get()); // reserved: cannot throw. New rings start hot
                reply.ok = 1;
                reply.pull = pull ? 1 : 0;
                ++shm_counts_.rings_in;
                shm_counts_.ring_bytes_in += uint64_t{o.cells} * shm::kCell;
            } catch (const std::bad_alloc &) {
            }
        }
    }
    send_control(reply_ep, kAmShmReply, reply, 0);
}

ucs_status_t Protocol::am_shm_reply_cb(void *arg, const void *header, size_t header_length, void *,
                                       size_t, const ucp_am_recv_param_t *) {
    auto *self = static_cast<Protocol *>(arg);
    ShmReply r;
    if (header_length != sizeof r) {
        return UCS_OK;
    }
    std::memcpy(&r, header, sizeof r);
    if (r.peer >= self->peers_.size()) {
        return UCS_OK;
    }
    Peer &peer = *self->peers_[r.peer];
    Guard ring(self->ring_lock(peer));
    if (peer.shm == Peer::kOffered) {
        if (r.ok == 1) {
            peer.ring = peer.offered.get();
            peer.shm = Peer::kReady;
            peer.pull = self->shm_pull_ && r.pull == 1 && self->watch_pulls(*peer.ring);
            ++self->shm_counts_.rings_out;
        } else {
            peer.offered->unlink();
            peer.shm = Peer::kNoRing;
        }
    }
    return UCS_OK;
}

// One ring's records to ring_arrival (for both loops below).
inline int Protocol::poll_ring(shm::Receiver *in) noexcept {
    return in->poll(64, [this, in](const shm::RecordHeader &r, const void *payload) {
        return ring_arrival(r, payload, in);
    });
}

int Protocol::poll_rings() noexcept {
    if (polling_) {
        return 0;
    }
    polling_ = true;
    int n = 0;
    for (auto &ring : inbound_) {
        n += poll_ring(ring.get());
    }
    polling_ = false;
    shm_counts_.received += static_cast<uint64_t>(n);
    return n;
}

// With many processes on a node most rings are idle, and reading each one's
// next cell on every round cost ~2 ns a ring (a 2-rank ping-pong beside 62
// idle processes: 0.43-0.59 us an 8 B message against 0.23 beside none). So a
// ring that stayed empty for many polls in a row goes cold: each round polls
// the hot rings and the next kColdPerRound cold ones in turn, and a cold ring
// that delivers is hot again. A cold ring's first record waits at most
// (cold rings / kColdPerRound) rounds. A ring cools after 128 empty polls per
// ring, so that peers served in turn (one exchange each in under 128 rounds)
// keep their rings hot. hot_ and cold_ hold every ring once and are reserved
// for all of them: moving a ring between them allocates nothing.
int Protocol::poll_hot_rings() noexcept {
    constexpr size_t kColdPerRound = 2;
    if (polling_) {
        return 0;
    }
    polling_ = true;
    int n = 0;
    const size_t cool_after = 128 * inbound_.size();
    for (size_t i = 0; i < hot_.size();) {
        shm::Receiver *in = hot_[i];
        const int got = poll_ring(in);
        n += got;
        if (got != 0) {
            in->idle_polls = 0;
        } else if (++in->idle_polls >= cool_after) {
            hot_[i] = hot_.back(); // the order of the rings does not matter
            hot_.pop_back();
            cold_.push_back(in);
            continue;
        }
        ++i;
    }
    for (size_t k = 0; k < kColdPerRound && !cold_.empty(); ++k) {
        if (next_cold_ >= cold_.size()) {
            next_cold_ = 0;
        }
        shm::Receiver *in = cold_[next_cold_];
        if (const int got = poll_ring(in)) {
            n += got;
            in->idle_polls = 0;
            cold_[next_cold_] = cold_.back();
            cold_.pop_back();
            hot_.push_back(in);
        } else {
            ++next_cold_;
        }
    }
    polling_ = false;
    shm_counts_.received += static_cast<uint64_t>(n);
    return n;
}

// UCX 1.13 has no query of an endpoint's transports: its printout has a line
// per lane, "lane[0]:  2:tcp/veth0.0 md[1]  -> md[1]/tcp/sysdev[255] am am_bw#0",
// of which we keep "tcp/veth0.0(am,am_bw)".
namespace {
std::string describe_lanes(const std::string &printout) {
    std::istringstream in(printout);
    std::string line;
    std::string out;
    while (std::getline(in, line)) {
        const size_t lane = line.find("lane[");
        const size_t colon = lane == std::string::npos ? lane : line.find("]:", lane);
        if (colon == std::string::npos) {
            continue;
        }
        std::istringstream fields(line.substr(colon + 2));
        std::string resource;
        fields >> resource; // "2:tcp/veth0.0"
        resource = resource.substr(resource.find(':') + 1);
        std::string word;
        while (fields >> word && word != "->") {
        }
        fields >> word; // the remote md
        std::string uses;
        while (fields >> word) {
            uses += (uses.empty() ? "" : ",") + word.substr(0, word.find('#'));
        }
        out += (out.empty() ? "" : " ") + resource + "(" + uses + ")";
    }
    return out.empty() ? "unknown" : out;
}
} // namespace

std::string Protocol::transports(const Peer &peer) const {
    char *text = nullptr;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    if (stream == nullptr || peer.ep == nullptr) {
        if (stream != nullptr) {
            std::fclose(stream);
            std::free(text);
        }
        return "unknown";
    }
    ucp_ep_print_info(peer.ep, stream);
    std::fclose(stream);
    std::string printout(text, size);
    std::free(text);
    return describe_lanes(printout);
}

} // namespace ubermatch::protocol

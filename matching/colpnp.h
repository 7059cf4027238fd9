// `colpnp` and its comparison variants (Ghazimirsaeed et al., ParCo 2019,
// Fig. 2 and section 5): one engine made of a point-to-point part and a
// collective part, each a `pnp` (partner/non-partner), a `col` (profiled
// collective queues) or a plain list.
//
//   colpnp    COL for collective elements, PNP for point-to-point ones
//   col+list  COL for collective elements, one list for point-to-point ones
//   col       the same as col+list: COL cannot hold point-to-point elements
//             (section 2.1), and the design of the paper's reference [15] is
//             COL with a list
//   list+pnp  one list for collective elements, PNP for point-to-point ones
//   pnp       PNP for all elements, collective or not (the design of [4])
//
// An element is collective when its tag is: a collective tag (below
// UM_ANY_TAG) is matched only by the same tag, and point-to-point tags and
// ANY_TAG never match one, so the two parts never share a match and no search
// has to look into both. The hint names the collective within the part.
#ifndef UBERMATCH_MATCHING_COLPNP_H
#define UBERMATCH_MATCHING_COLPNP_H

#include <memory>
#include <type_traits>

#include "matching/col.h"
#include "matching/element.h"
#include "matching/engine.h"
#include "matching/pnp.h"

namespace ubermatch {

// One posted and one unexpected queue: the "LL" of the paper's variants.
class ListPart {
public:
    ListPart() = default;
    ListPart(const ListPart &) = delete;
    ListPart &operator=(const ListPart &) = delete;

    Found take_message(int32_t source, int32_t tag, const um_hint_t &, bool remove, ElementPool &pool) {
        uint32_t inspected = 0;
        Entry *e = unexpected_.find_message(source, tag, inspected);
        if (e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = e->handle;
        if (remove) {
            unexpected_.remove(e);
            pool.put(e);
        }
        return {handle, inspected};
    }
    Found take_recv(int32_t source, int32_t tag, const um_hint_t &, ElementPool &pool) {
        uint32_t inspected = 0;
        Entry *e = posted_.find_recv(source, tag, inspected);
        if (e == nullptr) {
            return {nullptr, inspected};
        }
        void *handle = e->handle;
        posted_.remove(e);
        pool.put(e);
        return {handle, inspected};
    }
    void queue_recv(Element *e, const um_hint_t &) { posted_.push_back(e); }
    void queue_message(Element *e, const um_hint_t &) { unexpected_.push_back(e); }
    void done() {}
    bool cancel(int32_t, int32_t, void *request, ElementPool &pool) {
        Entry *e = posted_.find_handle(request);
        if (e == nullptr) {
            return false;
        }
        posted_.remove(e);
        pool.put(e);
        return true;
    }
    void visit(const std::function<void(bool, const QueuedElement &)> &f) const {
        visit_queue(posted_, true, f);
        visit_queue(unexpected_, false, f);
    }
    uint64_t queues() const { return 2; }
    uint64_t heap_bytes() const { return 0; }

private:
    PeerQueue posted_;
    PeerQueue unexpected_;
};

// No collective part: every element goes to the point-to-point part.
struct NoPart {};

template <class P2P, class Coll>
class SplitEngine final : public Engine {
public:
    static constexpr bool kSplit = !std::is_same_v<Coll, NoPart>;

    template <class MakeP2P, class MakeColl>
    SplitEngine(const char *name, int32_t comm_size, MakeP2P &&make_p2p, MakeColl &&make_coll)
        : Engine(comm_size), name_(name), p2p_(make_p2p()), coll_(make_coll()) {
        if constexpr (std::is_same_v<P2P, PnpPart>) {
            p2p_.attach_timers(&timers());
        }
        if constexpr (std::is_same_v<Coll, ColPart>) {
            coll_.attach_timers(&timers());
        }
    }

    const char *name() const override { return name_; }
    const P2P &p2p() const { return p2p_; }
    const Coll &coll() const { return coll_; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override {
        return route(tag, [&](auto &part) {
            const Found f = part.take_message(source, tag, hint, true, pool_);
            if (f.handle == nullptr) {
                part.queue_recv(pool_.get(source, tag, request, next_seq()), hint);
            }
            part.done();
            return f;
        });
    }

    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override {
        return route(tag, [&](auto &part) {
            const Found f = part.take_recv(source, tag, hint, pool_);
            if (f.handle == nullptr) {
                part.queue_message(pool_.get(source, tag, message, next_seq()), hint);
            }
            part.done();
            return f;
        });
    }

    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override {
        return route(tag, [&](auto &part) {
            const Found f = part.take_message(source, tag, hint, remove, pool_);
            part.done();
            return f;
        });
    }

    bool do_cancel(int32_t source, int32_t tag, void *request) override {
        return route(tag, [&](auto &part) { return part.cancel(source, tag, request, pool_); });
    }

    void do_collective_begin(const um_hint_t &hint) override {
        if constexpr (std::is_same_v<Coll, ColPart>) {
            coll_.collective_begin(hint);
        }
    }

    void do_collective_end(const um_hint_t &hint) override {
        if constexpr (std::is_same_v<Coll, ColPart>) {
            coll_.collective_end(hint);
        }
    }

    void visit(const Visitor &f) const override {
        p2p_.visit(f);
        if constexpr (kSplit) {
            coll_.visit(f);
        }
    }

    uint64_t queues_allocated() const override {
        if constexpr (kSplit) {
            return p2p_.queues() + coll_.queues();
        } else {
            return p2p_.queues();
        }
    }

    void backend_stats(um_stats_t &s) const override {
        if constexpr (std::is_same_v<P2P, PnpPart>) {
            s.dedicated_p2p = p2p_.budget().used;
        }
        if constexpr (std::is_same_v<Coll, ColPart>) {
            s.dedicated_coll = coll_.budget().used;
        }
    }

    uint64_t bytes_used() const override {
        uint64_t bytes = sizeof(*this) + pool_.bytes() + p2p_.heap_bytes();
        if constexpr (kSplit) {
            bytes += coll_.heap_bytes();
        }
        return bytes;
    }

private:
    template <class F>
    decltype(auto) route(int32_t tag, F &&f) {
        if constexpr (kSplit) {
            if (tag < UM_ANY_TAG) {
                return f(coll_);
            }
        }
        return f(p2p_);
    }

    const char *const name_;
    P2P p2p_;
    Coll coll_;
    ElementPool pool_;
};

using ColPnpEngine = SplitEngine<PnpPart, ColPart>;
using ColListEngine = SplitEngine<ListPart, ColPart>;
using ListPnpEngine = SplitEngine<PnpPart, ListPart>;
using PnpEngine = SplitEngine<PnpPart, NoPart>;

// Parameter ranges, checked by the registry.
constexpr int64_t kMinTheta = 1;
constexpr int64_t kMaxTheta = int64_t{1} << 20;
constexpr int64_t kMinQueueFactor = 1; // k_C, k_P
constexpr int64_t kMaxQueueFactor = 1024;

// The backends by name ("colpnp", "col+list", "col", "list+pnp", "pnp"), with
// their parameters already range-checked.
std::unique_ptr<Engine> make_split_engine(const char *name, int32_t comm_size, int64_t theta,
                                          int64_t k_c, int64_t k_p);

} // namespace ubermatch

#endif

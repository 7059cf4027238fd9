// `auto`: the engine that takes the cheapest search for each queue shape.
//
//  - Point-to-point and collective elements live in separate queues (a
//    collective tag, below UM_ANY_TAG, matches only itself: colpnp.h).
//  - Each of the four queues (posted and unexpected, of each part) is a plain
//    list while its searches are short: at depth 0-1, or when matches sit at
//    the head, nothing beats a head check. When a search has to compare
//    index_at elements the queue is indexed, and when it falls to list_at
//    elements it is a list again; the gap between the two keeps a queue from
//    changing form at every operation. A queue that drains also learns
//    whether its index paid off, and waits longer before the next when it
//    did not (index_rent, learn()).
//  - Indexed posted receives: every receive with at most one wildcard in a
//    hash index of per-key FIFOs (key_index.h), keyed (source, tag),
//    (ANY_SOURCE, tag) or (source, ANY_TAG); only (ANY_SOURCE, ANY_TAG)
//    receives in SIMD blocks (the `vector` kernels). Every receive carries its
//    posting sequence number, so an arrival (source, tag) takes the earliest
//    of the heads of the three keys it can match (probing the wildcard keys
//    only while such receives are queued) and of the first block slot: a
//    constant number of probes at any depth, wildcards included.
//  - Indexed unexpected messages: in the hash index by (source, tag), in FIFOs
//    by tag and (point-to-point) by source, and in one FIFO of arrival order:
//    an exact receive probes its key, an ANY_SOURCE receive its tag's FIFO, an
//    ANY_TAG receive its source's FIFO, and a receive with both wildcards
//    takes the head of the arrival FIFO (every point-to-point message matches
//    it, so there is nothing to scan: blocks would cost a slot and a filter
//    update per message for a search that needs none). The message a receive
//    takes is the head of each FIFO it is in (earlier ones there would match
//    too), so removal is O(1) in all of them.
//  - The indices of one engine hold at most max_index_bytes; a queue whose
//    index would pass it stays a list (counted), and tries again when it has
//    doubled.
#ifndef UBERMATCH_MATCHING_AUTO_H
#define UBERMATCH_MATCHING_AUTO_H

#include "matching/blocks.h"
#include "matching/engine.h"
#include "matching/key_index.h"
#include "matching/queue.h"
#include "matching/simd/dispatch.h"

namespace ubermatch {

// An element of `auto`: in a list, in a key FIFO, or in a wildcard block;
// an indexed unexpected message sits in its key's FIFO, the arrival FIFO, its
// tag's FIFO and (point-to-point) its source's FIFO.
struct AutoEntry : Entry {
    void *block = nullptr; // the block holding it, when it is in one
    uint32_t slot = 0;
    Link by_tag; // indexed messages: the FIFO of their tag, for ANY_SOURCE receives
    Link by_src; // and of their source, for ANY_TAG receives
};

inline AutoEntry *auto_entry(Entry *e) { return static_cast<AutoEntry *>(e); }

// A FIFO threaded through one of AutoEntry's own links (Queue threads Entry's).
template <Link AutoEntry::*L>
class AutoFifo {
public:
    bool empty() const { return head_ == nullptr; }
    Entry *front() const { return head_; }
    void push_back(AutoEntry *e) {
        (e->*L).next = nullptr;
        (e->*L).prev = tail_;
        if (tail_ != nullptr) {
            (auto_entry(tail_)->*L).next = e;
        } else {
            head_ = e;
        }
        tail_ = e;
    }
    void remove(AutoEntry *e) {
        const Link &l = e->*L;
        (l.prev != nullptr ? (auto_entry(l.prev)->*L).next : head_) = l.next;
        (l.next != nullptr ? (auto_entry(l.next)->*L).prev : tail_) = l.prev;
    }

private:
    Entry *head_ = nullptr;
    Entry *tail_ = nullptr;
};
using TagIndex = BasicKeyIndex<AutoFifo<&AutoEntry::by_tag>>;
using SourceIndex = BasicKeyIndex<AutoFifo<&AutoEntry::by_src>>;

// A summary of the keys a block has held since it was started: one bit per
// tag and per source, folded to 512 bits each, and whether it holds a
// wildcard. Removal leaves bits set, so it can only say "maybe": a search
// skips a block it rules out, and compares the rest with the SIMD kernel.
// Deep wildcard queues are where it pays: ANY_SOURCE receives with other tags
// rule their blocks out by tag.
struct BlockFilter {
    static constexpr unsigned kBits = 512;
    uint64_t tags[kBits / 64];
    uint64_t sources[kBits / 64];
    bool any_tag;
    bool any_source;

    static unsigned fold(int32_t v) {
        const uint32_t u = static_cast<uint32_t>(v);
        return (u ^ (u >> 9) ^ (u >> 18) ^ (u >> 27)) % kBits;
    }
    static bool test(const uint64_t *bits, int32_t v) {
        const unsigned b = fold(v);
        return (bits[b / 64] >> (b % 64)) & 1;
    }
    static void set(uint64_t *bits, int32_t v) {
        const unsigned b = fold(v);
        bits[b / 64] |= uint64_t{1} << (b % 64);
    }
    void reset() { *this = BlockFilter{}; }
    void add(int32_t source, int32_t tag) {
        source == UM_ANY_SOURCE ? void(any_source = true) : set(sources, source);
        tag == UM_ANY_TAG ? void(any_tag = true) : set(tags, tag);
    }
    // Posted: may a receive here match a message (source, tag)? (ANY_TAG
    // receives refuse negative tags; "maybe" stays true, the kernel decides.)
    bool may_match_message(int32_t source, int32_t tag) const {
        return (any_source || test(sources, source)) && (any_tag || test(tags, tag));
    }
    // Unexpected: may a message here match a receive (source, tag)?
    bool may_match_receive(int32_t source, int32_t tag) const {
        return (source == UM_ANY_SOURCE || test(sources, source)) &&
               (tag == UM_ANY_TAG || test(tags, tag));
    }
};

// SIMD blocks whose slots point back at their elements (and are told when
// compaction moves them), so that an element found through the key index
// can leave its block in O(1).
struct alignas(64) AutoRecvBlock {
    AutoRecvBlock *next;
    AutoRecvBlock *prev;
    uint32_t used;
    uint64_t first_seq; // of the element put in slot 0: no element here is older
    BlockFilter filter;
    alignas(64) int32_t src_val[kSlots];
    int32_t src_mask[kSlots];
    int32_t tag_val[kSlots];
    int32_t tag_mask[kSlots];
    void *handle[kSlots]; // the AutoEntry

    void fill(unsigned i, AutoEntry *e) {
        if (i == 0 && used == 1) { // the block's first element (fill comes after used++)
            filter.reset();
        }
        place(i, e);
    }
    void clear(unsigned i) {
        set_key(i, kHoleSource, kHoleTag);
        handle[i] = nullptr;
    }
    void move(unsigned to, const AutoRecvBlock &from, unsigned i) { place(to, auto_entry(static_cast<Entry *>(from.handle[i]))); }

private:
    void place(unsigned i, AutoEntry *e) {
        set_key(i, e->source, e->tag);
        handle[i] = e;
        e->block = this;
        e->slot = i;
        filter.add(e->source, e->tag);
        if (i == 0) {
            first_seq = e->seq;
        }
    }
    void set_key(unsigned i, int32_t source, int32_t tag) {
        const MaskedKey k = masked_key(source, tag);
        src_val[i] = k.src_val;
        src_mask[i] = k.src_mask;
        tag_val[i] = k.tag_val;
        tag_mask[i] = k.tag_mask;
    }
};

using AutoPool = Pool<AutoEntry>;

struct BlockStats {
    uint64_t blocks, holes, compactions;
};

// What the four queues of one engine share: the thresholds, the kernels, the
// memory bound with its account and the pool.
struct AutoShared {
    AutoShared(const simd::SimdParams &simd, const um_params_t &p)
        : k(*simd.kernel.kernels), compact_threshold(simd.compact_threshold),
          index_at(static_cast<size_t>(p.index_at)), list_at(static_cast<size_t>(p.list_at)),
          max_index_bytes(static_cast<size_t>(p.max_index_bytes)), index_rent(static_cast<size_t>(p.index_rent)) {}

    const simd::Kernels &k;
    double compact_threshold;
    size_t index_at;
    size_t list_at;
    size_t max_index_bytes;
    size_t index_rent;
    size_t index_bytes = 0; // all four queues' indices now
    uint64_t reshapes = 0;
    uint64_t memory_limited = 0;
    AutoPool pool;

    bool index_fits(size_t more) const { return index_bytes + more <= max_index_bytes; }
    bool learns() const { return index_rent == kLearnRent; }
    static constexpr size_t kLearnRent = SIZE_MAX; // index_rent -1: each queue learns its rent
};

// Receives or messages (Side) of one part. The list form is `list_`; the
// indexed form is the key index plus, for receives, the blocks of
// (ANY_SOURCE, ANY_TAG) receives and, for messages, the arrival FIFO.
template <bool Posted>
class AutoQueue {
    using Block = AutoRecvBlock;

public:
    explicit AutoQueue(AutoShared &sh)
        : sh_(sh), blocks_(sh.compact_threshold), reindex_at_(sh.index_at), rent_(sh.learns() ? 0 : sh.index_rent) {}
    ~AutoQueue() { sh_.index_bytes -= index_bytes(); }
    AutoQueue(const AutoQueue &) = delete;
    AutoQueue &operator=(const AutoQueue &) = delete;

    bool indexed() const { return indexed_; }
    bool empty() const { return size_ == 0; }
    uint64_t queues() const { return indexed_ ? keys_.keys() + 1 : 1; }
    BlockStats block_stats() const { return {blocks_.blocks(), blocks_.holes(), blocks_.compactions()}; }

    // Posted only: the earliest receive a message (source, tag) matches, removed.
    // Inline: a list whose head matches (a window of receives of one key) is
    // the common case.
    Found take_recv(int32_t source, int32_t tag) {
        Entry *head = list_.front();
        if (__builtin_expect(!indexed_ && head != nullptr && recv_matches(head->source, head->tag, source, tag), 1)) {
            return take_listed(auto_entry(head), 1); // one inspected: index_at is at least 2
        }
        return search_recv(source, tag);
    }
    // Unexpected only: the earliest message a receive (source, tag) matches,
    // removed when `remove`.
    Found take_message(int32_t source, int32_t tag, bool remove);
    // seq: the engine's posting or arrival order (Engine::next_seq), shared by all four queues.
    // Inline: a list's push is every pre-posted receive's and every unexpected message's.
    __attribute__((always_inline)) void push(int32_t source, int32_t tag, void *handle, uint64_t seq) {
        AutoEntry *e = sh_.pool.get(source, tag, handle, seq);
        ++size_;
        if (__builtin_expect(!indexed_, 1)) {
            list_.push_back(e);
        } else {
            push_indexed(e);
        }
    }
    bool cancel(int32_t source, int32_t tag, void *request); // posted only
    void visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const;

private:
    static bool is_exact(int32_t source, int32_t tag) {
        return source != UM_ANY_SOURCE && tag != UM_ANY_TAG;
    }
    // In the key index (else in blocks): every message; a receive unless both
    // its source and its tag are wildcards.
    static bool keyed(int32_t source, int32_t tag) {
        return !Posted || source != UM_ANY_SOURCE || tag != UM_ANY_TAG;
    }
    // Posted, indexed: the head of a key's FIFO, when earlier than `best`
    // (`best_fifo`: its FIFO).
    void earliest_of_key(int32_t source, int32_t tag, Entry *&best, PeerQueue *&best_fifo, uint32_t &inspected) {
        if (PeerQueue *fifo = keys_.find(source, tag)) {
            ++inspected;
            Entry *head = fifo->front();
            if (best == nullptr || head->seq < best->seq) {
                best = head;
                best_fifo = fifo;
            }
        }
    }
    void count_wild(const Entry *e, int delta) {
        if constexpr (Posted) {
            any_source_ += e->source == UM_ANY_SOURCE ? delta : 0;
            any_tag_ += e->tag == UM_ANY_TAG ? delta : 0;
        }
    }
    size_t index_bytes() const {
        return keys_.bytes() + blocks_.bytes() + by_tag_.bytes() + by_src_.bytes();
    }
    // Unexpected, indexed: a message's tag and source FIFOs, kept only once a
    // receive with one wildcard has searched this queue (built then, from the
    // arrival FIFO), so that exact-only traffic does not pay for them.
    void place_message(AutoEntry *e) {
        if (!wild_index_) {
            return;
        }
        by_tag_.insert(UM_ANY_SOURCE, e->tag).push_back(e);
        if (e->tag >= 0) { // ANY_TAG receives take point-to-point tags only
            by_src_.insert(e->source, UM_ANY_TAG).push_back(e);
        }
    }
    void take_message_out(AutoEntry *e) {
        if (!wild_index_) {
            return;
        }
        by_tag_.remove(UM_ANY_SOURCE, e->tag, e);
        if (e->tag >= 0) {
            by_src_.remove(e->source, UM_ANY_TAG, e);
        }
    }

    // Takes e out of whatever holds it and gives it back to the pool. fifo:
    // e's FIFO in keys_ when the caller found it (nullptr: looked up).
    Found take(AutoEntry *e, uint32_t inspected, PeerQueue *fifo = nullptr);
    // take() of a list's element.
    Found take_listed(AutoEntry *e, uint32_t inspected) {
        list_.remove(e);
        --size_;
        void *handle = e->handle;
        sh_.pool.put(e);
        if (size_ <= sh_.list_at) {
            reindex_at_ = sh_.index_at;
            scanned_ = 0;
        }
        return {handle, inspected};
    }
    Found search_recv(int32_t source, int32_t tag);
    void place(AutoEntry *e); // into the index
    void unplace(AutoEntry *e, PeerQueue *fifo); // out of the index (fifo: as take's)
    // Whether placing e could add index bytes: a key table that grows, or a
    // receive that goes to the blocks. Otherwise the bytes stay as they are, so
    // push() skips the memory bound and its account.
    bool index_grows(const AutoEntry *e) const {
        if (!keyed(e->source, e->tag) || keys_.needs_growth()) {
            return true;
        }
        return !Posted && wild_index_ && (by_tag_.needs_growth() || by_src_.needs_growth());
    }
    void push_indexed(AutoEntry *e);
    Hit<Block> scan(int32_t source, int32_t tag, uint64_t before, uint32_t &inspected) const; // posted
    // A search that had to compare index_at elements indexes its list (a deep
    // queue whose matches sit at its head, a window of receives of one key,
    // stays a list, where a head check is the cheapest search there is), once
    // the deep searches have compared index_rent times the list's length since
    // it was last short (list_at): an index pays for its building, and its
    // unbuilding when the queue drains, only where deep searches keep coming.
    // A queue that fills and drains with a deep search or two between (fds: a
    // receive that passes the messages it arrived behind, once a step) then
    // stays a list. 0: at the first deep search.
    void maybe_index(uint32_t inspected) {
        if (inspected >= sh_.index_at && size_ >= reindex_at_) {
            scanned_ += inspected;
            if (scanned_ >= rent_ * size_) {
                to_index();
            }
        }
    }
    void to_index();
    void to_list();
    // Keeps the index account right around a change of the index.
    template <typename F>
    void accounted(F &&f) {
        const size_t before = index_bytes();
        f();
        sh_.index_bytes = sh_.index_bytes - before + index_bytes();
    }

    AutoShared &sh_;
    bool indexed_ = false;
    size_t size_ = 0;
    PeerQueue list_;
    KeyIndex keys_;
    TagIndex by_tag_;    // unexpected only
    SourceIndex by_src_; // unexpected only
    BlockList<Block> blocks_; // posted only
    OrderQueue order_;        // indexed: messages in arrival order (receives: ordered())
    size_t reindex_at_; // a list of this many elements is indexed (grows when memory denied it)
    size_t scanned_ = 0; // elements the list's deep searches compared since it was last short
    // What learn() judges an index by (index_rent -1). passed_: for each
    // element a search of the indexed queue found past the oldest, their
    // distance in posting (arrival) order, summed: about what a list would
    // have compared, in units of the sequence numbers' spread over the queue
    // when it was indexed (span_). Counted only until the index has paid off
    // (tracking_); receives keep the posting order in order_ only until then,
    // as its links cost a deep queue's every operation.
    static constexpr uint64_t kIndexWorth = 16;
    static constexpr size_t kMaxRent = 64;
    size_t rent_; // index_rent, or what this queue learnt
    uint64_t passed_ = 0;
    uint64_t span_ = 1;
    bool tracking_ = false;
    bool ordered() const { return !Posted || tracking_; } // order_ holds every indexed element
    bool paid_off() const { return passed_ >= kIndexWorth * span_; }
    void judge(const Entry *found) {
        if (!tracking_) { // a list, or an index already judged
            return;
        }
        passed_ += found->seq - order_.front()->seq;
        if (paid_off()) { // proven for this life
            tracking_ = false;
            if constexpr (Posted) {
                order_ = OrderQueue{};
            }
        }
    }
    void learn();
    bool wild_index_ = false; // unexpected, indexed: by_tag_ and by_src_ are kept
    void build_wild_index();
    // Posted, indexed: keyed receives with ANY_SOURCE, with ANY_TAG (their keys are probed only then).
    size_t any_source_ = 0;
    size_t any_tag_ = 0;
};

class AutoEngine final : public Engine {
public:
    AutoEngine(int32_t comm_size, const simd::SimdParams &simd, const um_params_t &params);
    const char *name() const override { return "auto"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override;
    uint64_t bytes_used() const override;
    void backend_stats(um_stats_t &s) const override;

private:
    struct Part {
        explicit Part(AutoShared &sh) : posted(sh), unexpected(sh) {}
        AutoQueue<true> posted;
        AutoQueue<false> unexpected;
    };
    // Collective tags (below UM_ANY_TAG) match only themselves.
    Part &part_of(int32_t tag) { return tag < UM_ANY_TAG ? coll_ : p2p_; }

    const bool fell_back_;
    AutoShared sh_; // before the parts: they use it until destroyed
    Part p2p_;
    Part coll_;
};

} // namespace ubermatch

#endif

#include "matching/auto.h"

#include <algorithm>

namespace ubermatch {

namespace {

// Blocks needed to hold n elements, with room for one more.
template <class Block>
size_t blocks_bytes_for(size_t n) {
    return (n / kSlots + 1) * sizeof(Block);
}

} // namespace

// --- one queue ---

template <bool Posted>
Hit<typename AutoQueue<Posted>::Block> AutoQueue<Posted>::scan(int32_t source, int32_t tag,
                                                                uint64_t before,
                                                                uint32_t &inspected) const {
    const simd::Kernels &k = sh_.k;
    for (Block *b = blocks_.head(); b != nullptr; b = b->next) {
        // Slots are in posting order: a block that starts after `before` has nothing earlier.
        if (b->first_seq > before) {
            break;
        }
        if (!b->filter.may_match_message(source, tag)) {
            continue;
        }
        uint64_t bits = k.recv_hits(b->src_val, b->src_mask, b->tag_val, b->tag_mask, b->used, source, tag);
        bits &= used_bits(b->used);
        if (bits != 0) {
            const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
            inspected += i + 1;
            return {b, i};
        }
        inspected += b->used;
    }
    return {};
}

template <bool Posted>
Found AutoQueue<Posted>::search_recv(int32_t source, int32_t tag) {
    uint32_t inspected = 0;
    Entry *found = nullptr;
    PeerQueue *fifo = nullptr;
    if (!indexed_) {
        found = list_.find_recv(source, tag, inspected);
        maybe_index(inspected);
    } else {
        earliest_of_key(source, tag, found, fifo, inspected);
        if (any_source_ > 0) {
            earliest_of_key(UM_ANY_SOURCE, tag, found, fifo, inspected);
        }
        if (any_tag_ > 0 && tag >= 0) { // ANY_TAG never matches a collective tag
            earliest_of_key(source, UM_ANY_TAG, found, fifo, inspected);
        }
        if (blocks_.live() > 0) {
            const uint64_t bound = found != nullptr ? found->seq : UINT64_MAX;
            if (const Hit<Block> h = scan(source, tag, bound, inspected)) {
                Entry *wild = static_cast<Entry *>(h.block->handle[h.slot]);
                if (wild->seq < bound) {
                    found = wild;
                    fifo = nullptr; // (ANY_SOURCE, ANY_TAG): in no key's FIFO
                }
            }
        }
    }
    if (found == nullptr) {
        return {nullptr, inspected};
    }
    judge(found);
    return take(auto_entry(found), inspected, fifo);
}

template <bool Posted>
Found AutoQueue<Posted>::take_message(int32_t source, int32_t tag, bool remove) {
    uint32_t inspected = 0;
    Entry *found = nullptr;
    PeerQueue *fifo = nullptr; // found's in keys_, when known
    if (!indexed_) {
        found = list_.find_message(source, tag, inspected);
        maybe_index(inspected);
    } else if (is_exact(source, tag)) {
        if ((fifo = keys_.find(source, tag)) != nullptr) {
            found = fifo->front();
            inspected = 1;
        }
    } else if (tag != UM_ANY_TAG) { // ANY_SOURCE
        build_wild_index();
        if (auto *wild = by_tag_.find(UM_ANY_SOURCE, tag)) {
            found = wild->front();
            inspected = 1;
        }
    } else if (source != UM_ANY_SOURCE) { // ANY_TAG
        build_wild_index();
        if (auto *wild = by_src_.find(source, UM_ANY_TAG)) {
            found = wild->front();
            inspected = 1;
        }
    } else { // both wildcards: the earliest point-to-point message
        for (Entry *e = order_.front(); e != nullptr; e = OrderQueue::next(e)) {
            ++inspected;
            if (e->tag >= 0) {
                found = e;
                break;
            }
        }
    }
    if (found == nullptr) {
        return {nullptr, inspected};
    }
    judge(found);
    return remove ? take(auto_entry(found), inspected, fifo) : Found{found->handle, inspected};
}

template <bool Posted>
void AutoQueue<Posted>::build_wild_index() {
    if (wild_index_) {
        return;
    }
    accounted([&] {
        wild_index_ = true;
        order_.for_each([&](Entry &e) { place_message(auto_entry(&e)); });
    });
}

template <bool Posted>
Found AutoQueue<Posted>::take(AutoEntry *e, uint32_t inspected, PeerQueue *fifo) {
    if (!indexed_) {
        return take_listed(e, inspected);
    }
    if (Posted && e->block != nullptr) {
        accounted([&] { unplace(e, fifo); }); // a block may be freed
    } else {
        unplace(e, fifo); // the key tables never shrink: nothing to account
    }
    --size_;
    void *handle = e->handle;
    sh_.pool.put(e);
    if (size_ <= sh_.list_at) {
        to_list();
        reindex_at_ = sh_.index_at;
        learn();
    }
    return {handle, inspected};
}

template <bool Posted>
void AutoQueue<Posted>::unplace(AutoEntry *e, PeerQueue *fifo) {
    if (Posted && e->block != nullptr) {
        blocks_.remove(static_cast<Block *>(e->block), e->slot);
    }
    if (ordered()) {
        order_.remove(e);
    }
    if (keyed(e->source, e->tag)) {
        keys_.remove(fifo != nullptr ? *fifo : *keys_.find(e->source, e->tag), static_cast<Entry *>(e));
        count_wild(e, -1);
    }
    if constexpr (!Posted) {
        take_message_out(e);
    }
}

template <bool Posted>
void AutoQueue<Posted>::place(AutoEntry *e) {
    // Messages to the arrival FIFO, receives to it while learn() needs it;
    // keyed elements to the index, receives with both wildcards to blocks.
    if (Posted && !keyed(e->source, e->tag)) {
        blocks_.push_back(e);
    }
    if (ordered()) {
        order_.push_back(e);
    }
    if (keyed(e->source, e->tag)) {
        keys_.insert(e->source, e->tag).push_back(e);
        count_wild(e, +1);
    }
    if constexpr (!Posted) {
        place_message(e);
    }
}

template <bool Posted>
void AutoQueue<Posted>::push_indexed(AutoEntry *e) {
    if (!index_grows(e)) { // the common case: no table grows, no block is needed
        place(e);
        return;
    }
    size_t more = (Posted ? sizeof(Block) : 0) + keys_.bytes_after_insert() - keys_.bytes();
    if (wild_index_) {
        more += by_tag_.bytes_after_insert() - by_tag_.bytes() + by_src_.bytes_after_insert() - by_src_.bytes();
    }
    if (!sh_.index_fits(more)) {
        ++sh_.memory_limited;
        to_list();
        list_.push_back(e);
        reindex_at_ = 2 * size_;
        return;
    }
    accounted([&] { place(e); });
}

template <bool Posted>
bool AutoQueue<Posted>::cancel(int32_t source, int32_t tag, void *request) {
    Entry *e = nullptr;
    PeerQueue *fifo = nullptr;
    if (!indexed_) {
        e = list_.find_handle(request);
    } else if (keyed(source, tag)) {
        fifo = keys_.find(source, tag);
        e = fifo != nullptr ? fifo->find_handle(request) : nullptr;
    } else {
        blocks_.for_each([&](const Block &b, unsigned i) {
            Entry *x = static_cast<Entry *>(b.handle[i]);
            if (e == nullptr && x->handle == request) {
                e = x;
            }
        });
    }
    if (e == nullptr) {
        return false;
    }
    take(auto_entry(e), 0, fifo);
    return true;
}

// The verdict on an index whose queue has drained (index_rent -1): one that
// saved its searches fewer compares than kIndexWorth times its length did
// not pay for its building and unbuilding, so the next cycle waits for deep
// searches of twice the rent before indexing (from 4, up to 64 lengths); one
// that saved more is built at once next time.
template <bool Posted>
void AutoQueue<Posted>::learn() {
    if (sh_.learns()) {
        rent_ = paid_off() ? 0 : std::min<size_t>(rent_ == 0 ? 4 : 2 * rent_, kMaxRent);
    }
}

template <bool Posted>
void AutoQueue<Posted>::to_index() {
    const size_t need = KeyIndex::bytes_for(size_) * (Posted ? 1 : 3) + (Posted ? blocks_bytes_for<Block>(size_) : 0);
    if (!sh_.index_fits(need)) {
        ++sh_.memory_limited;
        reindex_at_ = 2 * size_;
        return;
    }
    span_ = list_.back()->seq - list_.front()->seq + 1;
    passed_ = 0;
    tracking_ = sh_.learns();
    accounted([&] {
        while (Entry *e = list_.front()) {
            list_.remove(e);
            place(auto_entry(e));
        }
    });
    indexed_ = true;
    ++sh_.reshapes;
}

template <bool Posted>
void AutoQueue<Posted>::to_list() {
    std::vector<Entry *> all;
    if (!ordered()) {
        // Keyed receives are only in the index; merge them with the blocks' by posting order.
        all.reserve(size_);
        blocks_.for_each([&](const Block &b, unsigned i) { all.push_back(static_cast<Entry *>(b.handle[i])); });
        keys_.for_each([&](const PeerQueue &fifo) { fifo.for_each([&](Entry &e) { all.push_back(&e); }); });
        std::sort(all.begin(), all.end(), [](const Entry *a, const Entry *b) { return a->seq < b->seq; });
    }
    accounted([&] {
        keys_.clear();
        by_tag_.clear();
        by_src_.clear();
        blocks_.clear();
    });
    const auto relist = [&](Entry &e) { // list_ threads another link than order_'s
        auto_entry(&e)->block = nullptr;
        list_.push_back(&e);
    };
    order_.for_each(relist); // empty unless ordered()
    for (Entry *e : all) {
        relist(*e);
    }
    order_ = OrderQueue{};
    wild_index_ = false;
    any_source_ = 0;
    any_tag_ = 0;
    indexed_ = false;
    tracking_ = false;
    scanned_ = 0;
    ++sh_.reshapes;
}

template <bool Posted>
void AutoQueue<Posted>::visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const {
    if (!indexed_) {
        visit_queue(list_, posted, f);
        return;
    }
    const auto report = [&](const Entry &e) { f(posted, QueuedElement{e.seq, e.handle, e.source, e.tag}); };
    if (ordered()) {
        order_.for_each(report);
        return;
    }
    blocks_.for_each([&](const Block &b, unsigned i) { report(*static_cast<const Entry *>(b.handle[i])); });
    keys_.for_each([&](const PeerQueue &fifo) { fifo.for_each(report); });
}

template class AutoQueue<true>;
template class AutoQueue<false>;

// --- the engine ---

AutoEngine::AutoEngine(int32_t comm_size, const simd::SimdParams &simd, const um_params_t &p)
    : Engine(comm_size), fell_back_(simd.kernel.fell_back), sh_(simd, p),
      p2p_(sh_), coll_(sh_) {}

Found AutoEngine::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    Part &p = part_of(tag);
    const Found f = p.unexpected.empty() ? Found{} : p.unexpected.take_message(source, tag, true);
    if (f.handle == nullptr) {
        p.posted.push(source, tag, request, next_seq());
    }
    return f;
}

Found AutoEngine::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    Part &p = part_of(tag);
    const Found f = p.posted.take_recv(source, tag);
    if (f.handle == nullptr) {
        p.unexpected.push(source, tag, message, next_seq());
    }
    return f;
}

Found AutoEngine::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    return part_of(tag).unexpected.take_message(source, tag, remove);
}

bool AutoEngine::do_cancel(int32_t source, int32_t tag, void *request) {
    return part_of(tag).posted.cancel(source, tag, request);
}

void AutoEngine::visit(const Visitor &f) const {
    for (const Part *p : {&p2p_, &coll_}) {
        p->posted.visit(true, f);
        p->unexpected.visit(false, f);
    }
}

uint64_t AutoEngine::queues_allocated() const {
    return p2p_.posted.queues() + p2p_.unexpected.queues() + coll_.posted.queues() +
           coll_.unexpected.queues();
}

uint64_t AutoEngine::bytes_used() const { return sizeof(*this) + sh_.pool.bytes() + sh_.index_bytes; }

void AutoEngine::backend_stats(um_stats_t &s) const {
    for (const Part *p : {&p2p_, &coll_}) {
        s.indexed += (p->posted.indexed() ? 1 : 0) + (p->unexpected.indexed() ? 1 : 0);
    }
    for (const Part *p : {&p2p_, &coll_}) {
        for (const BlockStats &b : {p->posted.block_stats(), p->unexpected.block_stats()}) {
            s.blocks += b.blocks;
            s.holes += b.holes;
            s.compactions += b.compactions;
        }
    }
    s.reshapes = sh_.reshapes;
    s.index_bytes = sh_.index_bytes;
    s.memory_limited = sh_.memory_limited;
    s.kernel = sh_.k.id;
    s.kernel_fallback = fell_back_ ? 1 : 0;
}

} // namespace ubermatch

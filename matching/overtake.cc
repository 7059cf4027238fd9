#include "matching/overtake.h"

#include <algorithm>
#include <cstring>

namespace ubermatch {

using overtake::kMessage;
using overtake::Slot;
using overtake::source_of;
using overtake::tag_of;

// One key's elements beyond the slot's own wait in a circular list: `more` is
// the newest, whose next is the oldest, so both ends are one load away and
// they leave in arrival (posting) order. Overtaking allows any order, but
// with a stack a window of receives of one key completed newest first, and
// MPI-level rates with it ran 4-9% below auto's (docs/relaxed.md).
namespace {
// The walk, oldest to newest: for (e = oldest(s); e; e = after(s, e)).
Entry *oldest(const Slot &s) { return s.more != nullptr ? s.more->q.next : nullptr; }
Entry *after(const Slot &s, const Entry *e) { return e == s.more ? nullptr : e->q.next; }

void push_newest(Slot &s, Entry *e) {
    if (s.more == nullptr) {
        e->q.next = e;
    } else {
        e->q.next = s.more->q.next;
        s.more->q.next = e;
    }
    s.more = e;
}
// Unlinks e, whose predecessor in the circle is prev (e itself when alone).
void unlink_entry(Slot &s, Entry *prev, Entry *e) {
    if (e == prev) {
        s.more = nullptr;
        return;
    }
    prev->q.next = e->q.next;
    if (e == s.more) {
        s.more = prev;
    }
}
} // namespace

// The slot's own element goes first and the oldest of the others takes its
// place, so a later element of the key never goes before one a probe has
// named (a probe and the receive after it agree, as MPI has them).
template <class Table>
void *OvertakeEngine<Table>::take(Slot *s) {
    void *handle = s->handle;
    if (Entry *e = oldest(*s)) {
        unlink_entry(*s, s->more, e);
        s->handle = e->handle;
        pool_.put(e);
    } else {
        if (for_any_tag(s->key)) {
            SourceTags &st = msg_tags_[static_cast<size_t>(source_of(s->key))];
            st.live -= st.indexed ? 1 : 0;
        }
        table_.erase(s);
    }
    return handle;
}

template <class Table>
Slot *OvertakeEngine<Table>::message_of(int32_t source, uint32_t &inspected) {
    SourceTags &st = msg_tags_[static_cast<size_t>(source)];
    if (!st.indexed) { // the source's first ANY_TAG search: list its tags once, keep them from now on
        table_.for_each([&](const Slot &s) {
            if (for_any_tag(s.key) && source_of(s.key) == source) {
                st.tags.push_back(tag_of(s.key));
                ++st.live;
            }
        });
        st.indexed = true;
    }
    while (st.live > 0 && !st.tags.empty()) {
        if (Slot *s = messages(pack_key(source, st.tags.back()), inspected)) {
            return s;
        }
        st.tags.pop_back(); // stale: that key's messages were taken
    }
    return nullptr;
}

template <class Table>
void OvertakeEngine<Table>::add_message_key(int32_t source, int32_t tag) {
    SourceTags &st = msg_tags_[static_cast<size_t>(source)];
    if (!st.indexed) {
        return;
    }
    ++st.live;
    st.tags.push_back(tag);
    if (st.tags.size() <= 2 * size_t{st.live} + 16) {
        return;
    }
    // Keep each live key once: sorted, unique, present in the table.
    std::sort(st.tags.begin(), st.tags.end());
    st.tags.erase(std::unique(st.tags.begin(), st.tags.end()), st.tags.end());
    st.tags.erase(std::remove_if(st.tags.begin(), st.tags.end(),
                                 [&](int32_t t) {
                                     uint32_t ignored = 0;
                                     return messages(pack_key(source, t), ignored) == nullptr;
                                 }),
                  st.tags.end());
}

template <class Table>
Found OvertakeEngine<Table>::match(uint64_t want, uint64_t put, void *handle, bool queue) {
    uint32_t inspected = 0;
    typename Table::Pos pos{};
    Slot *s = table_.find(want & ~kMessage, inspected, pos);
    if (s != nullptr && s->key == want) {
        return {take(s), inspected};
    }
    if (for_any_tag(put)) { // an ANY_TAG receive of its source may take it
        PeerQueue &q = any_tag_recvs_[static_cast<size_t>(source_of(put))];
        if (!q.empty()) {
            return pool_.take(q, q.front(), inspected);
        }
    }
    if (!queue) {
        return {nullptr, inspected, UM_ERR_ASSERTION};
    }
    if (s != nullptr) { // elements of this kind already wait under the key
        push_newest(*s, pool_.get(0, 0, handle, 0));
    } else {
        table_.insert(pos, put, handle, nullptr);
        if (for_any_tag(put)) {
            add_message_key(source_of(put), tag_of(put));
        }
    }
    return {nullptr, inspected};
}

template <class Table>
Found OvertakeEngine<Table>::post_any_tag(int32_t source, void *request) {
    uint32_t inspected = 0;
    if (Slot *s = message_of(source, inspected)) {
        return {take(s), inspected};
    }
    any_tag_recvs_[static_cast<size_t>(source)].push_back(pool_.get(source, UM_ANY_TAG, request, 0));
    return {nullptr, inspected};
}

template <class Table>
Found OvertakeEngine<Table>::post_one(int32_t source, int32_t tag, void *request) {
    if (source == UM_ANY_SOURCE || (tag == UM_ANY_TAG && !any_tag_)) {
        return kRefused;
    }
    if (tag == UM_ANY_TAG) {
        return post_any_tag(source, request);
    }
    const uint64_t k = pack_key(source, tag);
    return match(k | kMessage, k, request, true);
}

template <class Table>
Found OvertakeEngine<Table>::arrive_one(int32_t source, int32_t tag, void *message) {
    const uint64_t k = pack_key(source, tag);
    return match(k, k | kMessage, message, !no_unexpected_);
}

template <class Table>
Found OvertakeEngine<Table>::do_post_recv(int32_t source, int32_t tag, const um_hint_t &, void *request) {
    return post_one(source, tag, request);
}

template <class Table>
Found OvertakeEngine<Table>::do_arrive(int32_t source, int32_t tag, const um_hint_t &, void *message) {
    return arrive_one(source, tag, message);
}

template <class Table>
size_t OvertakeEngine<Table>::do_post_recv_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint,
                                                 um_match_t *out, int *status) {
    return each<true>(elems, n, hint, out, status,
                      [&](const um_elem_t &e) { return post_one(e.source, e.tag, e.handle); });
}

template <class Table>
size_t OvertakeEngine<Table>::do_arrive_batch(const um_elem_t *elems, size_t n, const um_hint_t &hint,
                                              um_match_t *out, int *status) {
    return each<false>(elems, n, hint, out, status,
                       [&](const um_elem_t &e) { return arrive_one(e.source, e.tag, e.handle); });
}

template <class Table>
Found OvertakeEngine<Table>::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE || (tag == UM_ANY_TAG && !any_tag_)) {
        return kRefused;
    }
    uint32_t inspected = 0;
    Slot *s = tag == UM_ANY_TAG ? message_of(source, inspected)
                                : messages(pack_key(source, tag), inspected);
    if (s == nullptr) {
        return {nullptr, inspected};
    }
    return {remove ? take(s) : top(*s), inspected};
}

template <class Table>
bool OvertakeEngine<Table>::do_cancel(int32_t source, int32_t tag, void *request) {
    if (source == UM_ANY_SOURCE) {
        return false; // never queued here
    }
    if (tag == UM_ANY_TAG) {
        return any_tag_ && pool_.take_handle(any_tag_recvs_[static_cast<size_t>(source)], request);
    }
    uint32_t inspected = 0;
    typename Table::Pos pos{};
    const uint64_t k = pack_key(source, tag);
    Slot *s = table_.find(k, inspected, pos);
    if (s == nullptr || s->key != k) {
        return false;
    }
    if (s->handle == request) {
        take(s);
        return true;
    }
    for (Entry *prev = s->more, *e = oldest(*s); e != nullptr; prev = e, e = after(*s, e)) {
        if (e->handle == request) {
            unlink_entry(*s, prev, e);
            pool_.put(e);
            return true;
        }
    }
    return false;
}

// No order is kept, so every element reports sequence number 0.
template <class Table>
void OvertakeEngine<Table>::visit(const Visitor &f) const {
    table_.for_each([&f](const Slot &s) {
        const bool posted = (s.key & kMessage) == 0;
        const int32_t source = source_of(s.key);
        const int32_t tag = tag_of(s.key);
        f(posted, QueuedElement{0, s.handle, source, tag});
        for (const Entry *e = oldest(s); e != nullptr; e = after(s, e)) {
            f(posted, QueuedElement{0, e->handle, source, tag});
        }
    });
    for (const PeerQueue &q : any_tag_recvs_) {
        visit_queue(q, true, f);
    }
}

template <class Table>
uint64_t OvertakeEngine<Table>::bytes_used() const {
    uint64_t tags = 0;
    for (const SourceTags &st : msg_tags_) {
        tags += st.tags.capacity() * sizeof(int32_t);
    }
    return sizeof(*this) + table_.bytes() + pool_.bytes() +
           any_tag_recvs_.capacity() * sizeof(PeerQueue) + msg_tags_.capacity() * sizeof(SourceTags) +
           tags;
}

template class OvertakeEngine<overtake::OpenTable>;
template class OvertakeEngine<overtake::TwoLevelTable>;

std::unique_ptr<Engine> make_overtake_engine(const char *table, int32_t comm_size,
                                             bool no_unexpected, const char *name, bool any_tag) {
    if (std::strcmp(table, overtake::OpenTable::kName) == 0) {
        return std::make_unique<OvertakeEngine<overtake::OpenTable>>(comm_size, no_unexpected,
                                                                     any_tag, name);
    }
    if (std::strcmp(table, overtake::TwoLevelTable::kName) == 0) {
        return std::make_unique<OvertakeEngine<overtake::TwoLevelTable>>(comm_size, no_unexpected,
                                                                         any_tag, name);
    }
    return nullptr;
}

} // namespace ubermatch

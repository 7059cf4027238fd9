#include "matching/overtake.h"

#include <cstring>

namespace ubermatch {

using overtake::kMessage;
using overtake::Slot;

// The slot's own element goes first and the stack's top takes its place, so a
// later element of the key never goes before one a probe has named (a probe
// and the receive after it agree, as MPI has them).
template <class Table>
void *OvertakeEngine<Table>::take(Slot *s) {
    void *handle = s->handle;
    if (Entry *e = s->more) {
        s->handle = e->handle;
        s->more = e->q.next;
        pool_.put(e);
    } else {
        table_.erase(s);
    }
    return handle;
}

template <class Table>
Found OvertakeEngine<Table>::match(uint64_t want, uint64_t put, void *handle, bool queue) {
    uint32_t inspected = 0;
    typename Table::Pos pos;
    Slot *s = table_.find(want & ~kMessage, inspected, pos);
    if (s != nullptr && s->key == want) {
        return {take(s), inspected};
    }
    if (!queue) {
        return {nullptr, inspected, UM_ERR_ASSERTION};
    }
    if (s != nullptr) { // elements of this kind already wait under the key
        Entry *e = pool_.get(0, 0, handle, 0);
        e->q.next = s->more;
        s->more = e;
    } else {
        table_.insert(pos, put, handle);
    }
    return {nullptr, inspected};
}

template <class Table>
Found OvertakeEngine<Table>::do_post_recv(int32_t source, int32_t tag, const um_hint_t &,
                                          void *request) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    const uint64_t k = pack_key(source, tag);
    return match(k | kMessage, k, request, true);
}

template <class Table>
Found OvertakeEngine<Table>::do_arrive(int32_t source, int32_t tag, const um_hint_t &,
                                       void *message) {
    const uint64_t k = pack_key(source, tag);
    return match(k, k | kMessage, message, !no_unexpected_);
}

template <class Table>
Found OvertakeEngine<Table>::do_probe(int32_t source, int32_t tag, const um_hint_t &, bool remove) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return kRefused;
    }
    uint32_t inspected = 0;
    typename Table::Pos pos;
    const uint64_t k = pack_key(source, tag);
    Slot *s = table_.find(k, inspected, pos);
    if (s == nullptr || s->key != (k | kMessage)) {
        return {nullptr, inspected};
    }
    return {remove ? take(s) : top(*s), inspected};
}

template <class Table>
bool OvertakeEngine<Table>::do_cancel(int32_t source, int32_t tag, void *request) {
    if (source == UM_ANY_SOURCE || tag == UM_ANY_TAG) {
        return false; // never queued here
    }
    uint32_t inspected = 0;
    typename Table::Pos pos;
    const uint64_t k = pack_key(source, tag);
    Slot *s = table_.find(k, inspected, pos);
    if (s == nullptr || s->key != k) {
        return false;
    }
    if (s->handle == request) {
        take(s);
        return true;
    }
    for (Entry **link = &s->more; *link != nullptr; link = &(*link)->q.next) {
        if ((*link)->handle == request) {
            Entry *e = *link;
            *link = e->q.next;
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
        const auto source = static_cast<int32_t>((s.key & ~kMessage) >> 32);
        const auto tag = static_cast<int32_t>(static_cast<uint32_t>(s.key));
        f(posted, QueuedElement{0, s.handle, source, tag});
        for (const Entry *e = s.more; e != nullptr; e = e->q.next) {
            f(posted, QueuedElement{0, e->handle, source, tag});
        }
    });
}

template class OvertakeEngine<overtake::OpenTable>;
template class OvertakeEngine<overtake::TwoLevelTable>;

std::unique_ptr<Engine> make_overtake_engine(const char *table, int32_t comm_size,
                                             bool no_unexpected, const char *name) {
    if (std::strcmp(table, overtake::OpenTable::kName) == 0) {
        return std::make_unique<OvertakeEngine<overtake::OpenTable>>(comm_size, no_unexpected, name);
    }
    if (std::strcmp(table, overtake::TwoLevelTable::kName) == 0) {
        return std::make_unique<OvertakeEngine<overtake::TwoLevelTable>>(comm_size, no_unexpected, name);
    }
    return nullptr;
}

} // namespace ubermatch

// Relaxed engines per communicator (info assertions, docs/relaxed.md): which
// engine a communicator's point-to-point traffic has, the switch between
// engines while it holds nothing, and what an arrival that breaks
// ubermatch_no_unexpected does.
#include <cstdio>
#include <cstring>

#include "matching/registry.h"
#include "matching/trace.h"
#include "ompi/mca/pml/ubermatch/protocol/protocol.h"

namespace ubermatch::protocol {

namespace {

constexpr const char *kNoUnexpSuffix = "-nounexp";

bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The assertions a backend relies on (UM_PROTO_ASSERT_*: the registry's bits).
constexpr bool same(um_proto_assert a, Relaxation r) { return static_cast<uint32_t>(a) == static_cast<uint32_t>(r); }
static_assert(same(UM_PROTO_ASSERT_NO_ANY_SOURCE, kNoAnySource) && same(UM_PROTO_ASSERT_NO_ANY_TAG, kNoAnyTag) &&
                  same(UM_PROTO_ASSERT_NO_UNEXPECTED, kNoUnexpected) &&
                  same(UM_PROTO_ASSERT_ALLOW_OVERTAKING, kOvertaking),
              "the protocol's assertion bits are the registry's");
uint32_t assertions_of(const std::string &backend) { return relaxations_of(backend); }

// The most relaxed backend that relies on no assertion outside bits; empty
// when every one relies on one (full matching then).
std::string most_relaxed_within(uint32_t bits) {
    std::string best;
    int best_count = 0;
    for (const Backend &b : backends()) {
        const uint32_t a = assertions_of(b.name);
        const int count = __builtin_popcount(a);
        if (a != 0 && (a & ~bits) == 0 && count > best_count) {
            best = b.name;
            best_count = count;
        }
    }
    return best;
}

bool holds_nothing(const Engine &e) {
    const um_stats_t s = e.stats();
    return s.posted_len == 0 && s.unexpected_len == 0;
}

// Only Open MPI's own traffic (negative tags) is queued: the engine may go on
// as the communicator's engine of that traffic.
bool holds_only_internal(const Engine &e) {
    const Snapshot snap = e.snapshot();
    for (const auto *q : {&snap.posted, &snap.unexpected}) {
        for (const QueuedElement &x : *q) {
            if (x.tag >= 0 || x.tag == UM_ANY_TAG) {
                return false;
            }
        }
    }
    return true;
}

void copy_name(char (&dst)[32], const std::string &src) {
    std::snprintf(dst, sizeof dst, "%s", src.c_str());
}

} // namespace

std::unique_ptr<Engine> Protocol::new_engine(const Comm &comm, const std::string &backend, bool internal) {
    return trace::record(make_engine(backend, comm.remote_size, params_), comm.cid, comm.local_rank, internal);
}

// Throws (before changing anything) when no engine can be made.
void Protocol::set_engine(Comm &comm, std::unique_ptr<Engine> engine, const std::string &backend) {
    const uint32_t relaxed = assertions_of(backend);
    if (relaxed != 0 && comm.coll == nullptr) {
        if (comm.engine != nullptr && comm.relaxed == 0) {
            comm.coll = std::move(comm.engine); // the caller checked: it holds only Open MPI's traffic
        } else {
            // The configured backend, unless it is itself relaxed (then the default).
            comm.coll = new_engine(comm, assertions_of(backend_) == 0 ? backend_ : "auto", true);
        }
    } else if (relaxed == 0 && comm.coll != nullptr && holds_nothing(*comm.coll)) {
        comm.coll.reset(); // one engine for all traffic again
    }
    comm.engine = std::move(engine);
    comm.backend = backend;
    comm.relaxed = relaxed;
}

// Tail queues wrap an engine of full matching; a communicator that asserts
// something under threading tailq keeps full matching (always correct: an
// assertion permits, it does not oblige) with its own locks.
void Protocol::choose_matching(Comm &comm, const std::string &backend) {
    if (tailq_ && assertions_of(backend) == 0) {
        comm.tailq = std::make_unique<TailBins>(backend, comm.remote_size, params_, tailq_bins_);
        comm.backend = backend;
        return;
    }
    set_engine(comm, new_engine(comm, backend), backend);
}

bool Protocol::comm_use(Comm *comm, const std::string &backend) {
    std::string name = backend.empty() ? backend_ : backend;
    make_engine(name, 1, params_); // a bad name throws here, with the valid ones
    if (comm->tailq) {
        return true; // see choose_matching
    }
    Guard guard(*this);
    if (comm->kept_unexpected && ends_with(name, kNoUnexpSuffix)) {
        name.resize(name.size() - std::strlen(kNoUnexpSuffix));
    }
    if (name == comm->backend) {
        return true;
    }
    const uint32_t wanted = assertions_of(name);
    // A full engine holding only Open MPI's traffic stays that traffic's engine.
    const bool keeps_internal = comm->relaxed == 0 && comm->coll == nullptr && wanted != 0;
    if (keeps_internal ? holds_only_internal(*comm->engine) : holds_nothing(*comm->engine)) {
        set_engine(*comm, new_engine(*comm, name), name);
        return true;
    }
    // Busy. An engine that asserts no more than the new assertions is still right
    // for them, and the switch waits until it is empty. One that relies on an
    // assertion MPI_Comm_set_info took back cannot wait: the receive it would
    // refuse (a wildcard allowed again) may be the one that empties it.
    if ((comm->relaxed & ~wanted) == 0) {
        return false;
    }
    return move_queued(*comm, name);
}

// backend, or, when the queued traffic breaks one of its assertions (set_info
// added mpi_assert_no_any_tag with an ANY_TAG receive pending, or
// ubermatch_no_unexpected with messages queued), the most relaxed engine that
// takes it: the new engine must take every element, and the old one may rely
// on an assertion taken back.
std::string Protocol::engine_for_queued(const std::string &backend, const Snapshot &snap) const {
    const uint32_t wanted = assertions_of(backend);
    uint32_t allowed = wanted;
    for (const QueuedElement &q : snap.posted) {
        allowed &= q.source == UM_ANY_SOURCE ? ~uint32_t{UM_PROTO_ASSERT_NO_ANY_SOURCE} : ~0u;
        allowed &= q.tag == UM_ANY_TAG ? ~uint32_t{UM_PROTO_ASSERT_NO_ANY_TAG} : ~0u;
    }
    if (!snap.unexpected.empty()) {
        allowed &= ~uint32_t{UM_PROTO_ASSERT_NO_UNEXPECTED};
    }
    if (allowed == wanted) {
        return backend;
    }
    const std::string relaxed = most_relaxed_within(allowed);
    if (!relaxed.empty()) {
        return relaxed;
    }
    return assertions_of(backend_) == 0 ? backend_ : "auto";
}

bool Protocol::move_queued(Comm &comm, const std::string &wanted) {
    const Snapshot snap = comm.engine->snapshot();
    const std::string backend = engine_for_queued(wanted, snap);
    std::unique_ptr<Engine> engine = new_engine(comm, backend);
    // Posted receives, then messages, each in its order: none matches on the way,
    // since neither queue held an element that matched one of the other.
    um_match_t match{};
    for (const QueuedElement &q : snap.posted) {
        auto *recv = static_cast<um_proto_recv_t *>(q.handle);
        if (engine->post_recv(q.source, q.tag, recv->hint, recv, &match) != UM_OK || match.handle != nullptr) {
            return false;
        }
    }
    for (const QueuedElement &q : snap.unexpected) {
        auto *msg = static_cast<Message *>(q.handle);
        if (engine->arrive(q.source, q.tag, message_hint(comm, *msg), msg, &match) != UM_OK ||
            match.handle != nullptr) {
            return false;
        }
    }
    set_engine(comm, std::move(engine), backend);
    return true;
}

um_proto_comm_info_t Protocol::comm_info(Comm *comm) {
    Guard guard(*this);
    um_proto_comm_info_t info{};
    copy_name(info.backend, comm->backend);
    if (comm->coll != nullptr) {
        copy_name(info.coll_backend, comm->coll->name());
    }
    info.relaxed = comm->relaxed;
    info.refused = comm->refused;
    return info;
}

// MPI has no call to report an arrival to, and dropping the message would
// lose data of a program that is racy rather than wrong: the communicator
// keeps it and every later unexpected message (the same engine without the
// relaxation, its posted receives moved over in posting order, none of which
// can match anything queued), and says so once.
bool Protocol::keep_unexpected(Comm &comm, Message *m, const um_hint_t &hint, um_match_t *match) noexcept {
    const Message &msg = *m;
    ++comm.refused;
    try {
        std::string name = comm.backend;
        if (ends_with(name, kNoUnexpSuffix)) {
            name.resize(name.size() - std::strlen(kNoUnexpSuffix));
        }
        if (!move_queued(comm, name)) {
            return false; // cannot happen: the same engine, one relaxation less
        }
        comm.engine->arrive(msg.hdr.source, msg.hdr.tag, hint, m, match);
    } catch (const std::exception &) {
        return false; // no memory: the message is dropped (counted)
    }
    if (!comm.kept_unexpected) {
        comm.kept_unexpected = true;
        std::fprintf(stderr,
                     "ubermatch: rank %d, communicator %u: a message from rank %d with tag %d "
                     "arrived before any receive for it, against the communicator's assertion "
                     "ubermatch_no_unexpected; it is kept, and so are later unexpected messages "
                     "(engine %s from now on)\n",
                     comm.local_rank, comm.cid, msg.hdr.source, msg.hdr.tag, comm.backend.c_str());
    }
    return true;
}

} // namespace ubermatch::protocol

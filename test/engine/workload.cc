#include "test/engine/workload.h"

namespace ubermatch::test {

std::vector<Mix> standard_mixes() {
    return {
        // name              n    src tags  anySrc anyTag coll  bad    depth
        {"wildcard-heavy",   16,  8,   4,   0.30,  0.30,  0.10, 0.002, 64},
        {"exact-many-peers", 256, 200, 16,  0.02,  0.02,  0.05, 0.002, 512},
        {"deep",             64,  32,  1000, 0.05, 0.05,  0.05, 0.001, 3000},
        {"collective",       32,  32,  8,   0.10,  0.30,  0.50, 0.002, 256},
        {"one-peer",         4,   1,   64,  0.20,  0.20,  0.10, 0.002, 1024},
        // Sources and tags below 512: many (source, tag) pairs share a fuzzy
        // fast key (xor folds, the 8 low tag bits), collective tags among them.
        {"fuzzy-collisions", 512, 512, 512, 0.10,  0.10,  0.20, 0.002, 2048},
        // seed 000: a few sources flood the queues past theta (partners); many
        // collective calls whose hints recur (col's profiling and levels)
        {"hot-sources",      128, 128, 32,  0.05,  0.05,  0.02, 0.001, 1500, 4, 0.6},
        {"collective-calls", 64,  64,  8,   0.05,  0.10,  0.90, 0.001, 600,  0, 0.0, true},
    };
}

um_hint_t Workload::hint_for(int32_t tag) {
    um_hint_t h{};
    h.comm_size = static_cast<uint32_t>(mix_.comm_size);
    if (mix_.call_hints) {
        static const uint32_t kSizes[] = {8, 1024, 65536};
        h.msg_size = kSizes[pick(3)];
        if (tag < -1) {
            h.coll = static_cast<uint16_t>(1 + (-tag) % (UM_COLL_COUNT - 1));
        }
        return h;
    }
    h.msg_size = static_cast<uint32_t>(pick(1 << 16));
    if (tag < -1) {
        h.coll = static_cast<uint16_t>(1 + pick(UM_COLL_COUNT - 1));
    }
    return h;
}

// A point-to-point element's source, moved to a hot one in hot_share of the cases.
int32_t Workload::skew(int32_t source) {
    if (mix_.hot_sources > 0 && uniform() < mix_.hot_share) {
        return pick(mix_.hot_sources);
    }
    return source;
}

void Workload::recv_key(int32_t &source, int32_t &tag) {
    const bool coll = uniform() < mix_.collective;
    source = uniform() < mix_.any_source ? UM_ANY_SOURCE : pick(mix_.sources);
    if (coll) {
        tag = -2 - pick(8); // collective tags: -2 .. -9
    } else {
        tag = uniform() < mix_.any_tag ? UM_ANY_TAG : pick(mix_.tags);
    }
    if (!coll && source != UM_ANY_SOURCE) {
        source = skew(source);
    }
}

void Workload::msg_key(int32_t &source, int32_t &tag) {
    source = pick(mix_.sources);
    tag = uniform() < mix_.collective ? -2 - pick(8) : pick(mix_.tags);
    if (tag >= 0) {
        source = skew(source);
    }
}

void Workload::maybe_break(Op &op) {
    if (uniform() >= mix_.bad) {
        return;
    }
    switch (pick(3)) {
    case 0: op.source = mix_.comm_size + pick(4); break;
    case 1: op.source = -2 - pick(4); break;
    default:
        if (op.kind == OpKind::arrive) {
            op.tag = UM_ANY_TAG;
        } else {
            op.handle = nullptr;
        }
    }
}

Op Workload::next(const Oracle &model) {
    if (++count_ % 997 == 0) {
        phase_ = pick(3);
    }
    Op op{};
    const double r = uniform();
    const size_t posted = model.posted().size();
    const size_t unexpected = model.unexpected().size();

    if (posted > mix_.max_depth || unexpected > mix_.max_depth) {
        // Drain the deeper queue with an operation aimed at a random element of it.
        if (posted >= unexpected) {
            const OracleEntry &e = model.posted()[static_cast<size_t>(pick(static_cast<int32_t>(posted)))];
            op.kind = OpKind::arrive;
            op.source = e.source == UM_ANY_SOURCE ? pick(mix_.sources) : e.source;
            op.tag = e.tag == UM_ANY_TAG ? pick(mix_.tags) : e.tag;
        } else {
            const OracleEntry &e = model.unexpected()[static_cast<size_t>(pick(static_cast<int32_t>(unexpected)))];
            op.kind = uniform() < 0.8 ? OpKind::post_recv : OpKind::mprobe;
            op.source = uniform() < 0.2 ? UM_ANY_SOURCE : e.source;
            op.tag = e.tag;
        }
    } else if (r < 0.06) {
        op.kind = uniform() < 0.5 ? OpKind::probe : OpKind::mprobe;
        recv_key(op.source, op.tag);
    } else if (r < 0.12 && !recent_recvs_.empty()) {
        const OracleEntry &e =
            recent_recvs_[static_cast<size_t>(pick(static_cast<int32_t>(recent_recvs_.size())))];
        op.kind = OpKind::cancel;
        op.source = e.source;
        op.tag = e.tag;
        op.handle = e.handle;
    } else {
        const double post_share = phase_ == 1 ? 0.75 : phase_ == 2 ? 0.25 : 0.5;
        op.kind = uniform() < post_share ? OpKind::post_recv : OpKind::arrive;
        if (op.kind == OpKind::post_recv) {
            recv_key(op.source, op.tag);
        } else {
            msg_key(op.source, op.tag);
        }
    }

    if (op.kind == OpKind::post_recv || op.kind == OpKind::arrive) {
        // Odd handles are receives, even ones messages: a mix-up cannot go unseen.
        next_handle_ += 2;
        op.handle = reinterpret_cast<void *>(next_handle_ + (op.kind == OpKind::post_recv ? 1 : 0));
    }
    op.hint = hint_for(op.tag);
    maybe_break(op);
    if (op.kind == OpKind::post_recv && op.handle != nullptr) {
        if (recent_recvs_.size() < 64) {
            recent_recvs_.push_back({op.source, op.tag, op.handle});
        } else {
            recent_recvs_[static_cast<size_t>(pick(64))] = {op.source, op.tag, op.handle};
        }
    }
    return op;
}

Step apply(Engine &engine, Oracle &model, const Op &op) {
    Step s;
    switch (op.kind) {
    case OpKind::post_recv:
        s.want_rc = model.post_recv(op.source, op.tag, op.handle, &s.want);
        s.got_rc = engine.post_recv(op.source, op.tag, op.hint, op.handle, &s.got);
        break;
    case OpKind::arrive:
        s.want_rc = model.arrive(op.source, op.tag, op.handle, &s.want);
        s.got_rc = engine.arrive(op.source, op.tag, op.hint, op.handle, &s.got);
        break;
    case OpKind::probe:
    case OpKind::mprobe: {
        const bool remove = op.kind == OpKind::mprobe;
        s.want_rc = model.probe(op.source, op.tag, remove, &s.want);
        s.got_rc = remove ? engine.mprobe(op.source, op.tag, op.hint, &s.got)
                          : engine.probe(op.source, op.tag, op.hint, &s.got);
        break;
    }
    case OpKind::cancel: {
        bool want_removed = false, got_removed = false;
        s.want_rc = model.cancel(op.source, op.tag, op.handle, &want_removed);
        s.got_rc = engine.cancel(op.source, op.tag, op.handle, &got_removed);
        s.want = want_removed ? op.handle : nullptr;
        s.got.handle = got_removed ? op.handle : nullptr;
        break;
    }
    }
    return s;
}

} // namespace ubermatch::test

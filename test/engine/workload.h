// Randomized operation sequences for the differential test: seeded and
// reproducible, with wildcards, collective (negative) tags and hints, probe,
// mprobe, cancel, bad arguments, many sources and deep queues.
#ifndef UBERMATCH_TEST_WORKLOAD_H
#define UBERMATCH_TEST_WORKLOAD_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "matching/engine.h"
#include "matching/ubermatch_engine.h"
#include "test/engine/oracle.h"

namespace ubermatch::test {

enum class OpKind { post_recv, arrive, probe, mprobe, cancel };

struct Op {
    OpKind kind;
    int32_t source;
    int32_t tag;
    um_hint_t hint;
    void *handle; // the new receive or message; the receive to cancel
};

// The shape of one randomized sequence.
struct Mix {
    std::string name;
    int32_t comm_size;
    int32_t sources;     // sources in use, <= comm_size
    int32_t tags;        // point-to-point tags in use: 0 .. tags-1
    double any_source;   // probability of ANY_SOURCE on a receive
    double any_tag;      // probability of ANY_TAG on a receive
    double collective;   // probability that an element is collective traffic
    double bad;          // probability of a malformed call
    size_t max_depth;    // beyond this, operations drain the deeper queue
    // Seed 000 (left out: uniform sources, random hints):
    int32_t hot_sources = 0; // the first hot_sources sources send and receive ...
    double hot_share = 0.0;  // ... this share of the point-to-point elements
    bool call_hints = false; // collective hints as the PML gives them: the collective a
                             // function of the tag, message sizes from a few
};

std::vector<Mix> standard_mixes();

class Workload {
public:
    Workload(const Mix &mix, uint64_t seed) : mix_(mix), rng_(seed) {}

    // The next operation; `model` is read to aim drains and cancels at queued elements.
    Op next(const Oracle &model);

private:
    double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }
    int32_t pick(int32_t n) { return std::uniform_int_distribution<int32_t>(0, n - 1)(rng_); }
    um_hint_t hint_for(int32_t tag);
    int32_t skew(int32_t source);
    void recv_key(int32_t &source, int32_t &tag);
    void msg_key(int32_t &source, int32_t &tag);
    void maybe_break(Op &op);

    Mix mix_;
    std::mt19937_64 rng_;
    uintptr_t next_handle_ = 0;
    int phase_ = 0;        // 0 balanced, 1 receives first, 2 messages first
    uint64_t count_ = 0;
    std::vector<OracleEntry> recent_recvs_; // cancel targets, some already matched
};

// One operation done on an engine and on the model: each one's status and
// the element it matched (a cancel: the receive when removed, else none).
struct Step {
    int want_rc = 0, got_rc = 0;
    void *want = nullptr;
    um_match_t got{};
};
Step apply(Engine &engine, Oracle &model, const Op &op);

} // namespace ubermatch::test

#endif

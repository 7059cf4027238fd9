// MPI_Comm_set_info at random, with traffic queued: the communicator's engine
// switches among full and relaxed backends (at once when an assertion is taken
// back: its queued receives and messages move; else once it is empty) while
// receives and messages come and go, and every receive must get what MPI's
// matching gives it. A model of the two queues predicts each match: with
// every message processed before the next step, matching is deterministic
// under the engines that keep order; under the overtaking ones the receive
// may take any queued element of its key, and the model follows what it did.
// Elements that were queued in an overtaking engine keep no order among
// themselves when they move to one that keeps it (the assertion was in force
// when they came), and come before everything queued there after them.
#include "test/protocol/pair.h"

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "matching/registry.h"

using namespace prototest;
using ubermatch::kNoAnySource;
using ubermatch::kNoAnyTag;
using ubermatch::kOvertaking;
using ubermatch::relaxations_of;

namespace {

struct Posted {
    int32_t source, tag; // or the wildcards
    size_t op;           // index into the test's receives
    bool unordered = false; // was queued in an overtaking engine
};
struct Queued {
    int32_t tag;
    int value;
    bool unordered = false;
};

bool takes(const Posted &r, int32_t tag) { return r.tag == UM_ANY_TAG || r.tag == tag; }

} // namespace

TEST_CASE("protocol: random engine switches with traffic queued keep MPI's matching", "[protocol][relaxed]") {
    const char *const kBackends[] = {"auto",     "nosource", "exact",  "overtake", "overtake-anytag", "nosource-nounexp",
                                     "exact-nounexp", "list", "perpeer", "bins",   "vector",   "fuzzy8",
                                     "pnp",      "col",      "colpnp", "col+list", "list+pnp"};
    const uint64_t seed = GENERATE(range(1u, 21u));
    std::mt19937_64 rng(seed);
    Pair p;
    um_proto_comm_t *ca = p.comm(p.a, 21);
    um_proto_comm_t *cb = p.comm(p.b, 21);
    std::deque<Op> recvs, sends;
    std::deque<int> recv_bufs, send_bufs;
    std::vector<Posted> posted;    // the model's posted queue, in posting order
    std::vector<Queued> unexpected; // and its unexpected queue, in arrival order
    int next_value = 0, switches = 0, moves = 0, checked = 0;
    char err[256];
    auto backend_now = [&] {
        um_proto_comm_info_t info{};
        um_proto_comm_info(p.b, cb, &info);
        return std::string(info.backend);
    };
    // The receive took `value` out of the model's unexpected queue: the first
    // of its key under ordering, any of them (the one it got) when overtaking.
    auto take_unexpected = [&](size_t op, const Posted &r, bool overtaking) {
        const Op &o = recvs[op];
        const auto first = std::find_if(unexpected.begin(), unexpected.end(),
                                        [&](const Queued &q) { return takes(r, q.tag); });
        const bool any = overtaking || (first != unexpected.end() && first->unordered);
        for (size_t k = 0; k < unexpected.size(); ++k) {
            if (!takes(r, unexpected[k].tag) || (any && !overtaking && !unexpected[k].unordered)) {
                continue;
            }
            if (any ? recv_bufs[op] == unexpected[k].value : true) {
                INFO("seed " << seed << ", receive " << op << " (tag " << r.tag << ") under " << backend_now());
                CHECK(recv_bufs[op] == unexpected[k].value);
                CHECK(o.tag == unexpected[k].tag);
                unexpected.erase(unexpected.begin() + static_cast<std::ptrdiff_t>(k));
                ++checked;
                return;
            }
        }
        FAIL("seed " << seed << ": receive " << op << " got " << recv_bufs[op] << ", no queued message of its key");
    };
    // Every receive left gets a message and every message a receive (the
    // matches of the engines that keep order are checked at the steps).
    auto drain = [&] {
        while (!posted.empty()) {
            const int32_t tag = posted.front().tag == UM_ANY_TAG ? 0 : posted.front().tag;
            send_bufs.push_back(next_value++);
            sends.emplace_back();
            REQUIRE(p.send(ca, tag, &send_bufs.back(), sizeof(int), sends.back()) == UM_PROTO_OK);
            auto done = [&](const Posted &r) { return recvs[r.op].done; };
            REQUIRE(p.until([&] { return std::any_of(posted.begin(), posted.end(), done); }));
            posted.erase(std::find_if(posted.begin(), posted.end(), done));
        }
        while (!unexpected.empty()) {
            recvs.emplace_back();
            recv_bufs.push_back(-1);
            REQUIRE(p.post(cb, 0, unexpected.front().tag, &recv_bufs.back(), sizeof(int), recvs.back()) ==
                    UM_PROTO_OK);
            REQUIRE(p.until([&] { return recvs.back().done; }));
            const auto got = std::find_if(unexpected.begin(), unexpected.end(),
                                          [&](const Queued &q) { return q.value == recv_bufs.back(); });
            REQUIRE(got != unexpected.end());
            unexpected.erase(got);
        }
    };
    std::string wanted; // what MPI_Comm_set_info asked for, until the engine is it
    for (int step = 0; step < 3000; ++step) {
        if (rng() % 40 == 0) {
            drain(); // empty queues: a switch that waits for them is made
        }
        if (rng() % 12 == 0) { // MPI_Comm_set_info
            wanted = kBackends[rng() % (sizeof kBackends / sizeof kBackends[0])];
        }
        if (!wanted.empty()) { // the PML asks again at every call until the switch is made
            const std::string before = backend_now();
            const size_t queued = posted.size() + unexpected.size();
            const int rc = um_proto_comm_use(p.b, cb, wanted.c_str(), err, sizeof err);
            REQUIRE((rc == UM_PROTO_OK || rc == UM_PROTO_AGAIN));
            if (rc == UM_PROTO_OK) {
                ++switches;
                moves += queued != 0 && backend_now() != before;
                wanted.clear();
            }
            um_stats_t st{};
            um_proto_comm_stats(p.b, cb, &st);
            INFO("seed " << seed << ", step " << step << ": " << before << " -> " << backend_now());
            REQUIRE(st.posted_len == posted.size()); // nothing lost by a switch
            REQUIRE(st.unexpected_len == unexpected.size());
        }
        const std::string now = backend_now();
        const uint32_t relax = relaxations_of(now);
        const bool overtaking = (relax & kOvertaking) != 0;
        if (overtaking) {
            for (Posted &r : posted) {
                r.unordered = true;
            }
            for (Queued &q : unexpected) {
                q.unordered = true;
            }
        }
        const int what = static_cast<int>(rng() % 10);
        if (what < 5) {
            // A receive with the wildcards the communicator's assertions allow:
            // the PML checks the new ones at once, and a switch still waiting
            // is to an engine that takes what the current one takes.
            const uint32_t allowed = relaxations_of(wanted.empty() ? now : wanted);
            const bool any_source = (allowed & kNoAnySource) == 0 && rng() % 4 == 0;
            const bool any_tag = (allowed & kNoAnyTag) == 0 && rng() % 3 == 0;
            Posted r{any_source ? UM_ANY_SOURCE : 0, any_tag ? UM_ANY_TAG : static_cast<int32_t>(rng() % 4),
                     recvs.size(), overtaking};
            recvs.emplace_back();
            recv_bufs.push_back(-1);
            REQUIRE(p.post(cb, r.source, r.tag, &recv_bufs.back(), sizeof(int), recvs.back()) == UM_PROTO_OK);
            const bool waiting = std::none_of(unexpected.begin(), unexpected.end(),
                                              [&](const Queued &q) { return takes(r, q.tag); });
            if (waiting) {
                posted.push_back(r);
                CHECK_FALSE(recvs.back().done);
            } else {
                REQUIRE(p.until([&] { return recvs.back().done; }));
                take_unexpected(r.op, r, overtaking);
            }
        } else { // a message, processed at b before the next step
            const int32_t tag = static_cast<int32_t>(rng() % 4);
            send_bufs.push_back(next_value++);
            sends.emplace_back();
            REQUIRE(p.send(ca, tag, &send_bufs.back(), sizeof(int), sends.back()) == UM_PROTO_OK);
            const auto first = std::find_if(posted.begin(), posted.end(), [&](const Posted &r) { return takes(r, tag); });
            if (first == posted.end()) {
                unexpected.push_back({tag, send_bufs.back(), overtaking});
                REQUIRE(p.until([&] { return unexpected_len(p.b, cb) == unexpected.size(); }));
                continue;
            }
            // Under ordering the first receive that takes it; overtaking: any of them.
            auto it = first;
            REQUIRE(p.until([&] {
                for (it = posted.begin(); it != posted.end(); ++it) {
                    if (takes(*it, tag) && recvs[it->op].done) {
                        return true;
                    }
                }
                return false;
            }));
            INFO("seed " << seed << ", message " << send_bufs.back() << " (tag " << tag << ") under " << now);
            if (!overtaking && !first->unordered) {
                CHECK(it == first);
            } else if (!overtaking) {
                CHECK(it->unordered); // one of those moved without an order
            }
            CHECK(recv_bufs[it->op] == send_bufs.back());
            ++checked;
            posted.erase(it);
        }
    }
    drain();
    REQUIRE(p.until([&] { return std::all_of(sends.begin(), sends.end(), [](const Op &o) { return o.done; }); }));
    INFO("seed " << seed << ": " << switches << " switches, " << moves << " with traffic queued, " << checked
                 << " matches checked");
    CHECK(switches > 50);
    CHECK(moves > 5);
    CHECK(checked > 1000);
}

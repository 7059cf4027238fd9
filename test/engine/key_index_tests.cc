// The key index under `auto`, `exact` and `nosource` (matching/key_index.h),
// against a map of deques: random pushes and removals over few keys, so that
// probe runs collide, shift back on erasure and grow; the last key emptied
// waits in the table and must stay invisible.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "matching/key_index.h"

using namespace ubermatch;

namespace {

using Key = std::pair<int32_t, int32_t>;

// Every key of the model is found with its elements in order, and no other.
void check(KeyIndex &index, const std::map<Key, std::deque<Entry *>> &model) {
    size_t live = 0;
    size_t elements = 0;
    for (const auto &[key, fifo] : model) {
        PeerQueue *q = index.find(key.first, key.second);
        if (fifo.empty()) {
            REQUIRE(q == nullptr);
            continue;
        }
        ++live;
        elements += fifo.size();
        REQUIRE(q != nullptr);
        std::vector<Entry *> got;
        q->for_each([&](Entry &e) { got.push_back(&e); });
        REQUIRE(got == std::vector<Entry *>(fifo.begin(), fifo.end()));
    }
    REQUIRE(index.keys() == live);
    size_t visited = 0;
    size_t fifos = 0;
    index.for_each([&](const PeerQueue &q) {
        ++fifos;
        q.for_each([&](const Entry &) { ++visited; });
    });
    REQUIRE(fifos == live);
    REQUIRE(visited == elements);
}

} // namespace

TEST_CASE("key index: random pushes and removals over colliding keys match a model", "[key_index]") {
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        KeyIndex index;
        std::map<Key, std::deque<Entry *>> model;
        std::vector<Entry> pool(4096);
        size_t used = 0;
        const int32_t keys = 2 + static_cast<int32_t>(rng() % 40); // few keys: long probe runs
        for (int op = 0; op < 3000; ++op) {
            const Key k{static_cast<int32_t>(rng() % 4), static_cast<int32_t>(rng() % keys)};
            if (rng() % 2 == 0 && used < pool.size()) {
                Entry *e = &pool[used++];
                *e = Entry{};
                e->source = k.first;
                e->tag = k.second;
                index.insert(k.first, k.second).push_back(e);
                model[k].push_back(e);
            } else if (!model[k].empty()) {
                // Any element of the key, as a cancel takes one; the head as a match does.
                auto &fifo = model[k];
                const size_t at = rng() % 3 == 0 ? rng() % fifo.size() : 0;
                PeerQueue *q = index.find(k.first, k.second);
                REQUIRE(q != nullptr);
                index.remove(*q, fifo[at]);
                fifo.erase(fifo.begin() + static_cast<long>(at));
            }
            if (op % 50 == 0) {
                check(index, model);
            }
        }
        check(index, model);
    }
}

TEST_CASE("key index: a key emptied and filled again in turn, others emptied between", "[key_index]") {
    KeyIndex index;
    std::vector<Entry> e(3);
    for (int i = 0; i < 100; ++i) {
        // One element at a time on (1, 5): the waiting key comes back into use.
        index.insert(1, 5).push_back(&e[0]);
        REQUIRE(index.keys() == 1);
        REQUIRE(index.find(1, 5)->front() == &e[0]);
        index.remove(*index.find(1, 5), &e[0]);
        REQUIRE(index.find(1, 5) == nullptr);
        REQUIRE(index.keys() == 0);
        // Another key empties: (1, 5), waiting, must leave without disturbing it.
        index.insert(2, i).push_back(&e[1]);
        index.insert(3, i).push_back(&e[2]);
        index.remove(*index.find(2, i), &e[1]);
        REQUIRE(index.find(1, 5) == nullptr);
        REQUIRE(index.find(2, i) == nullptr);
        REQUIRE(index.find(3, i)->front() == &e[2]);
        REQUIRE(index.keys() == 1);
        index.remove(*index.find(3, i), &e[2]);
        REQUIRE(index.keys() == 0);
    }
    // 300 distinct keys passed through; at most one waits, so the table stayed small.
    REQUIRE(index.bytes() <= KeyIndex::bytes_for(4));
}

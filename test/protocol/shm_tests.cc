// The shared-memory ring (protocol/shm.h) alone: records of every size,
// wrap-around, a full ring, old payload that looks like a stamp, and a
// segment that is not ours; pulls and their return slots.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "ompi/mca/pml/ubermatch/protocol/shm.h"

using namespace ubermatch::protocol;

namespace {

constexpr uint32_t kCells = 256;

struct Sent {
    uint32_t seq;
    std::vector<unsigned char> payload;
};

// A payload for a record that starts at cell `start`: where each later cell
// of the record begins, the stamp a record starting there one lap later
// would carry. Were a stamp ever read from old payload instead of a record
// header, a record would seem to arrive early, and its check would fail.
std::vector<unsigned char> poisoned(size_t n, uint64_t start, std::mt19937_64 &rng, uint64_t cells = kCells) {
    std::vector<unsigned char> p(n);
    for (auto &b : p) {
        b = static_cast<unsigned char>(rng());
    }
    for (size_t j = 1;; ++j) {
        const size_t at = j * shm::kCell - sizeof(shm::RecordHeader);
        if (at + 8 > n) {
            break;
        }
        const uint64_t stamp = start + j + cells + 1;
        std::memcpy(&p[at], &stamp, 8);
    }
    return p;
}

// Where the sender puts its next record of n bytes (as Sender::push does).
uint64_t start_of(uint64_t head, size_t n) {
    const size_t need = shm::cells_for(n);
    const size_t index = head % kCells;
    return index + need > kCells ? head + (kCells - index) : head;
}

} // namespace

TEST_CASE("ring: records of every size arrive whole and in order over many laps, also those left for a later poll", "[shm]") {
    std::string err;
    shm::Sender tx(kCells, err);
    REQUIRE(err.empty());
    shm::Receiver rx(tx.name(), err);
    INFO(err);
    REQUIRE(err.empty());

    std::mt19937_64 rng(42);
    const size_t max = shm::max_payload(kCells);
    std::deque<Sent> in_flight;
    uint32_t next_seq = 0;
    uint64_t head = 0; // the sender's position, mirrored
    uint64_t received = 0;
    uint64_t refused = 0;
    uint64_t left = 0; // records the receiver could not take yet (no descriptor)
    auto check = [&](const shm::RecordHeader &r, const void *payload) {
        REQUIRE_FALSE(in_flight.empty());
        if (rng() % 8 == 0) {
            ++left; // must come again, first, at the next poll
            return false;
        }
        const Sent &s = in_flight.front();
        REQUIRE(r.seq == s.seq);
        REQUIRE(r.length == s.payload.size());
        REQUIRE(r.cid == 7);
        REQUIRE(r.tag == static_cast<int32_t>(s.seq % 1000));
        REQUIRE((s.payload.empty() || std::memcmp(payload, s.payload.data(), s.payload.size()) == 0));
        in_flight.pop_front();
        ++received;
        return true;
    };
    while (received < 20000) {
        // Bursts of sends, then a partial drain: the ring fills, wraps and refuses.
        const int burst = static_cast<int>(rng() % 40);
        for (int i = 0; i < burst; ++i) {
            size_t n = rng() % 4 == 0 ? rng() % (max + 1) : rng() % 200;
            const uint64_t start = start_of(head, n);
            auto payload = poisoned(n, start, rng);
            WireHeader h{7, 1, static_cast<int32_t>(next_seq % 1000), next_seq, 0, 0, 0, 0};
            if (tx.push(h, payload.data(), n)) {
                head = start + shm::cells_for(n);
                in_flight.push_back({next_seq++, std::move(payload)});
            } else {
                ++refused;
            }
        }
        rx.poll(static_cast<int>(rng() % 50), check);
    }
    for (int i = 0; i < 100000 && !in_flight.empty(); ++i) {
        rx.poll(64, check);
    }
    REQUIRE(in_flight.empty());
    CHECK(rx.poll(64, check) == 0);
    CHECK(refused > 0); // the full ring was exercised
    CHECK(left > 0);
}

TEST_CASE("ring: a long record's payload cells are each cleared before a record of a later lap is read there",
          "[shm]") {
    // A record over cells 40..239 spans four words of the sender's map of
    // payload cells (a part, two whole, a part); one lap later one-cell records
    // pass over those cells, each read as soon as it is sent, so the receiver
    // looks at every next cell while its old payload (the stamp a record there
    // would carry) is still in it.
    constexpr uint32_t cells = 1024;
    std::string err;
    shm::Sender tx(cells, err);
    REQUIRE(err.empty());
    shm::Receiver rx(tx.name(), err);
    REQUIRE(err.empty());
    std::mt19937_64 rng(7);
    uint32_t seq = 0, expect = 0;
    int phantom = 0;
    auto take = [&](const shm::RecordHeader &r, const void *) {
        phantom += r.seq != expect;
        ++expect;
        return true;
    };
    auto send = [&](size_t n, const void *data) {
        const WireHeader h{7, 1, 0, seq++, 0, 0, 0, 0};
        REQUIRE(tx.push(h, data, n));
        CHECK(rx.poll(64, take) == 1);
    };
    const unsigned char byte = 1;
    for (int c = 0; c < 40; ++c) {
        send(1, &byte);
    }
    const size_t n = 200 * shm::kCell - sizeof(shm::RecordHeader);
    REQUIRE(shm::cells_for(n) == 200);
    const auto payload = poisoned(n, 40, rng, cells);
    send(n, payload.data());
    for (uint64_t head = 240; head < 2 * cells; ++head) {
        send(1, &byte);
    }
    CHECK(phantom == 0);
    CHECK(expect == seq);
}

TEST_CASE("ring: a full ring refuses, and takes again once the receiver has read", "[shm]") {
    std::string err;
    shm::Sender tx(kCells, err);
    REQUIRE(err.empty());
    shm::Receiver rx(tx.name(), err);
    REQUIRE(err.empty());
    const WireHeader h{1, 0, 5, 0, 0, 0, 0, 0};
    const unsigned char byte = 0xab;
    uint32_t pushed = 0;
    while (tx.push(h, &byte, 1)) {
        ++pushed;
    }
    CHECK(pushed == kCells - 1); // one cell per record: the ring but the cell after the last
    int got = 0;
    auto count = [&](const shm::RecordHeader &r, const void *p) {
        CHECK(r.length == 1);
        CHECK(*static_cast<const unsigned char *>(p) == 0xab);
        ++got;
        return true;
    };
    CHECK(rx.poll(10, count) == 10);
    CHECK_FALSE(tx.push(h, &byte, 1)); // 10 read, but not yet given back (kPublish)
    while (rx.poll(64, count) > 0) {
    }
    CHECK(got == static_cast<int>(kCells - 1));
    CHECK(tx.push(h, &byte, 1));
    CHECK(rx.poll(64, count) == 1);
}

TEST_CASE("ring: a segment that is not an ubermatch ring is refused", "[shm]") {
    const std::string name = "/ubermatch-test-foreign." + std::to_string(getpid());
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, static_cast<off_t>(shm::segment_bytes(kCells))) == 0);
    void *p = mmap(nullptr, shm::segment_bytes(kCells), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    std::memset(p, 0x5a, sizeof(shm::Segment)); // wrong magic
    munmap(p, shm::segment_bytes(kCells));
    close(fd);
    std::string err;
    shm::Receiver rx(name, err);
    CHECK(err.find("not an ubermatch ring") != std::string::npos);
    shm::Receiver missing("/ubermatch-test-missing." + std::to_string(getpid()), err);
    CHECK(err.find("shm_open") != std::string::npos);
    shm::Sender bad(100, err); // not a power of two
    CHECK(err.find("power of two") != std::string::npos);
}

// Pulls at the ring level: the receiver may read the sender only when it can
// read the ring's own control line there; at most kReturns are out; the
// receiver hands them back in any order, a failed read marked, and the slots
// serve lap after lap.
TEST_CASE("ring: pulls are read from the sender and handed back, kReturns at most out, lap after lap",
          "[shm][pull]") {
    std::string err;
    shm::Sender tx(1024, err);
    REQUIRE(err.empty());
    shm::Receiver rx(tx.name(), err);
    REQUIRE(err.empty());
    const auto segment = reinterpret_cast<uint64_t>(tx.segment());
    CHECK_FALSE(rx.enable_pull(getpid(), segment + shm::kCell)); // not the ring's control line
    unsigned char none = 0;
    CHECK_FALSE(rx.read(&none, segment, 1)); // not enabled: nothing is read
    REQUIRE(rx.enable_pull(getpid(), segment));

    std::vector<uint64_t> ops(shm::kReturns); // cookies: 8-aligned addresses
    std::vector<std::vector<unsigned char>> bufs;
    for (uint32_t i = 0; i < shm::kReturns; ++i) {
        bufs.push_back(std::vector<unsigned char>(1000 + i, static_cast<unsigned char>(i)));
        ops[i] = reinterpret_cast<uint64_t>(&ops[i]);
    }
    const WireHeader h{1, 0, 5, 0, 0, 0, 0, 0};
    for (int lap = 0; lap < 5; ++lap) {
        INFO("lap " << lap);
        for (uint32_t i = 0; i < shm::kReturns; ++i) {
            REQUIRE(tx.push_pull(h, bufs[i].data(), bufs[i].size(), ops[i]));
        }
        CHECK_FALSE(tx.push_pull(h, bufs[0].data(), bufs[0].size(), ops[0])); // all slots out
        CHECK(tx.pulls_out() == shm::kReturns);
        std::vector<shm::PullDescriptor> got;
        while (rx.poll(64, [&](const shm::RecordHeader &r, const void *p) {
            CHECK((r.flags & kFlagPull) != 0);
            REQUIRE(r.length == sizeof(shm::PullDescriptor));
            shm::PullDescriptor d;
            std::memcpy(&d, p, sizeof d);
            got.push_back(d);
            return true;
        }) > 0) {
        }
        REQUIRE(got.size() == shm::kReturns);
        CHECK(tx.reap([](uint64_t, bool) {}) == 0); // nothing handed back yet
        // Handed back last first; the one at `lap` fails.
        for (uint32_t k = shm::kReturns; k-- > 0;) {
            const shm::PullDescriptor &d = got[k];
            std::vector<unsigned char> into(d.length);
            REQUIRE(rx.read(into.data(), d.address, d.length));
            CHECK(into == bufs[k]);
            rx.give_back(d.sender, k != static_cast<uint32_t>(lap));
        }
        std::vector<std::pair<uint64_t, bool>> back;
        CHECK(tx.reap([&](uint64_t sender, bool ok) { back.push_back({sender, ok}); }) ==
              static_cast<int>(shm::kReturns));
        REQUIRE(back.size() == shm::kReturns);
        for (uint32_t j = 0; j < shm::kReturns; ++j) {
            const uint32_t k = shm::kReturns - 1 - j;
            CHECK(back[j].first == ops[k]);
            CHECK(back[j].second == (k != static_cast<uint32_t>(lap)));
        }
        CHECK(tx.pulls_out() == 0);
    }
}

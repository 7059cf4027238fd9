// The SIMD backends (vector, fuzzy32, fuzzy16, fuzzy8) and their kernels:
// every kernel against the scalar one, the choice of kernel and its fallback,
// fast-key collisions and ANY_TAG against negative tags, holes and compaction.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "matching/blocks.h"
#include "matching/fuzzy.h"
#include "matching/registry.h"
#include "matching/simd/dispatch.h"
#include "matching/ubermatch_engine.h"

using namespace ubermatch;
using simd::kSlots;

namespace {

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

const um_hint_t kP2P{};

const char *const kSimdBackends[] = {"vector", "fuzzy32", "fuzzy16", "fuzzy8"};
const char *const kFuzzyBackends[] = {"fuzzy32", "fuzzy16", "fuzzy8"};

struct Driver {
    std::unique_ptr<Engine> e;
    explicit Driver(const std::string &backend, const um_params_t &p = default_params(),
                    int32_t n = 1024)
        : e(make_engine(backend, n, p)) {}
    void *post(int32_t s, int32_t t, uintptr_t handle) {
        um_match_t m{};
        REQUIRE(e->post_recv(s, t, kP2P, h(handle), &m) == UM_OK);
        return m.handle;
    }
    void *arrive(int32_t s, int32_t t, uintptr_t handle, uint32_t *inspected = nullptr) {
        um_match_t m{};
        REQUIRE(e->arrive(s, t, kP2P, h(handle), &m) == UM_OK);
        if (inspected != nullptr) {
            *inspected = m.inspected;
        }
        return m.handle;
    }
    uint64_t false_positives() const { return e->stats().false_positives; }
};

um_params_t with_threshold(double t) {
    um_params_t p = default_params();
    p.compact_threshold = t;
    return p;
}

// One block's worth of random keys, edge values mixed in.
struct Block {
    alignas(64) int32_t a[kSlots], b[kSlots], c[kSlots], d[kSlots];
    alignas(64) uint8_t k8[kSlots];
    alignas(64) uint16_t k16[kSlots];
    alignas(64) uint32_t k32[kSlots];
};

// The kernels' definitions, slot by slot: the reference every kernel (the
// scalar one too) is held to.
uint64_t naive_recv_hits(const Block &b, int32_t s, int32_t t) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        if ((s & b.b[i]) == b.a[i] && (t & b.d[i]) == b.c[i]) {
            bits |= uint64_t{1} << i;
        }
    }
    return bits;
}

uint64_t naive_msg_hits(const Block &b, int32_t sv, int32_t sm, int32_t tv, int32_t tm) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        if ((b.a[i] & sm) == sv && (b.c[i] & tm) == tv) {
            bits |= uint64_t{1} << i;
        }
    }
    return bits;
}

template <typename K>
uint64_t naive_key_hits(const K *keys, K key, K wild) {
    uint64_t bits = 0;
    for (unsigned i = 0; i < kSlots; ++i) {
        if (keys[i] == key || keys[i] == wild) {
            bits |= uint64_t{1} << i;
        }
    }
    return bits;
}

int32_t pick(std::mt19937 &rng, const std::vector<int32_t> &from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

} // namespace

TEST_CASE("every kernel gives the slot-by-slot definition's bits", "[simd]") {
    const std::vector<int32_t> values = {0, 1, 2, 3, 5, -1, -2, -5, INT32_MIN, INT32_MAX, 255, 256};
    const std::vector<int32_t> masks = {-1, 0, INT32_MIN};
    const auto kernels = simd::supported(simd::cpu_features());
    REQUIRE(kernels.back() == &simd::scalar_kernels());
    std::mt19937 rng(5);
    for (const simd::Kernels *k : kernels) {
        DYNAMIC_SECTION(k->name) {
            for (int round = 0; round < 2000; ++round) {
                Block blk;
                for (unsigned i = 0; i < kSlots; ++i) {
                    blk.a[i] = pick(rng, values);
                    blk.b[i] = pick(rng, masks);
                    blk.c[i] = pick(rng, values);
                    blk.d[i] = pick(rng, masks);
                    blk.k8[i] = static_cast<uint8_t>(pick(rng, values));
                    blk.k16[i] = static_cast<uint16_t>(pick(rng, values));
                    blk.k32[i] = static_cast<uint32_t>(pick(rng, values));
                }
                const int32_t s = pick(rng, values);
                const int32_t t = pick(rng, values);
                const int32_t sm = pick(rng, masks);
                const int32_t tm = pick(rng, masks);
                const unsigned n = round % 8 == 0 ? kSlots : 1 + static_cast<unsigned>(rng() % kSlots);
                const uint64_t used = used_bits(n);
                CHECK((k->recv_hits(blk.a, blk.b, blk.c, blk.d, n, s, t) & used) ==
                      (naive_recv_hits(blk, s, t) & used));
                CHECK((k->msg_hits(blk.a, blk.c, n, s & sm, sm, t & tm, tm) & used) ==
                      (naive_msg_hits(blk, s & sm, sm, t & tm, tm) & used));
                const auto u8 = static_cast<uint8_t>(s);
                const auto w8 = static_cast<uint8_t>(t);
                CHECK((k->key8_hits(blk.k8, n, u8, w8) & used) == (naive_key_hits(blk.k8, u8, w8) & used));
                const auto u16 = static_cast<uint16_t>(s);
                const auto w16 = static_cast<uint16_t>(t);
                CHECK((k->key16_hits(blk.k16, n, u16, w16) & used) ==
                      (naive_key_hits(blk.k16, u16, w16) & used));
                const auto u32 = static_cast<uint32_t>(s);
                const auto w32 = static_cast<uint32_t>(t);
                CHECK((k->key32_hits(blk.k32, n, u32, w32) & used) ==
                      (naive_key_hits(blk.k32, u32, w32) & used));
            }
            // One hit in each slot in turn: bit i is slot i.
            for (unsigned i = 0; i < kSlots; ++i) {
                Block blk{};
                for (unsigned j = 0; j < kSlots; ++j) {
                    blk.a[j] = 1;
                    blk.b[j] = -1;
                    blk.c[j] = 1;
                    blk.d[j] = -1;
                }
                blk.a[i] = 7;
                blk.k8[i] = 7;
                blk.k16[i] = 7;
                blk.k32[i] = 7;
                const uint64_t bit = uint64_t{1} << i;
                CHECK(k->recv_hits(blk.a, blk.b, blk.c, blk.d, kSlots, 7, 1) == bit);
                CHECK(k->msg_hits(blk.a, blk.c, kSlots, 7, -1, 0, 0) == bit);
                CHECK(k->key8_hits(blk.k8, kSlots, 7, 7) == bit);
                CHECK(k->key16_hits(blk.k16, kSlots, 7, 7) == bit);
                CHECK(k->key32_hits(blk.k32, kSlots, 7, 7) == bit);
                // Only the first i + 1 slots asked for: slot i is still compared.
                CHECK((k->key8_hits(blk.k8, i + 1, 7, 7) & used_bits(i + 1)) == bit);
                CHECK((k->recv_hits(blk.a, blk.b, blk.c, blk.d, i + 1, 7, 1) & used_bits(i + 1)) == bit);
            }
        }
    }
}

TEST_CASE("the kernel is chosen from the CPU, and a missing instruction set falls back", "[simd]") {
    using simd::kAvx2;
    using simd::kAvx512;
    CHECK(std::string(simd::select("auto", kAvx2 | kAvx512).kernels->name) == "avx512");
    CHECK(std::string(simd::select("", kAvx2).kernels->name) == "avx2");
    CHECK(std::string(simd::select("auto", 0).kernels->name) == "scalar");
    CHECK_FALSE(simd::select("auto", 0).fell_back);
    CHECK(std::string(simd::select("avx2", kAvx2 | kAvx512).kernels->name) == "avx2");
    CHECK(std::string(simd::select("scalar", kAvx2 | kAvx512).kernels->name) == "scalar");

    const simd::Selection no512 = simd::select("avx512", kAvx2);
    CHECK(std::string(no512.kernels->name) == "avx2");
    CHECK(no512.fell_back);
    CHECK_THAT(no512.warning, Catch::Contains("'avx512'") && Catch::Contains("AVX-512") &&
                                  Catch::Contains("using 'avx2'"));
    const simd::Selection bare = simd::select("avx2", 0);
    CHECK(std::string(bare.kernels->name) == "scalar");
    CHECK(bare.fell_back);
    CHECK_THAT(bare.warning, Catch::Contains("using 'scalar'"));
    CHECK(simd::supported(kAvx2).size() == 2);

    CHECK_THROWS_WITH(simd::select("sse4", kAvx2),
                      Catch::Contains("unknown kernel 'sse4'") &&
                          Catch::Contains("auto, avx512, avx2, scalar"));

    SECTION("an engine on a CPU without AVX-512 that asks for it") {
        const simd::ScopedCpuFeatures pose(kAvx2);
        um_params_t p = default_params();
        p.kernel = "avx512";
        for (const char *name : kSimdBackends) {
            Driver d(name, p, 8);
            const um_stats_t s = d.e->stats();
            CHECK(s.kernel == UM_KERNEL_AVX2);
            CHECK(s.kernel_fallback == 1);
            d.post(3, 4, 1);
            CHECK(d.arrive(3, 4, 100) == h(1));
        }
        um_kernel_t k = UM_KERNEL_NONE;
        int fell_back = 0;
        char msg[256] = "";
        CHECK(um_kernel_select("avx512", &k, &fell_back, msg, sizeof msg) == UM_OK);
        CHECK(k == UM_KERNEL_AVX2);
        CHECK(fell_back == 1);
        CHECK_THAT(std::string(msg), Catch::Contains("using 'avx2'"));
    }
    SECTION("the same request on a CPU that has it") {
        const simd::ScopedCpuFeatures pose(kAvx2 | kAvx512);
        um_params_t p = default_params();
        p.kernel = "avx512";
        Driver d("fuzzy8", p, 8);
        CHECK(d.e->stats().kernel == UM_KERNEL_AVX512);
        CHECK(d.e->stats().kernel_fallback == 0);
    }
}

TEST_CASE("kernel and compaction parameters are checked", "[simd]") {
    for (const char *name : kSimdBackends) {
        DYNAMIC_SECTION(name) {
            um_params_t p = default_params();
            CHECK(make_engine(name, 4, p)->stats().kernel == simd::best(simd::cpu_features()).id);
            p.kernel = nullptr; // as "auto"
            CHECK_NOTHROW(make_engine(name, 4, p));
            p.kernel = "avx-512";
            CHECK_THROWS_WITH(make_engine(name, 4, p),
                              Catch::Contains("'avx-512'") &&
                                  Catch::Contains("valid kernels are: auto, avx512, avx2, scalar"));
            p = default_params();
            for (double bad : {-0.1, 1.5, std::nan("")}) {
                p.compact_threshold = bad;
                CHECK_THROWS_WITH(make_engine(name, 4, p),
                                  Catch::Contains("compact_threshold") && Catch::Contains("0 .. 1"));
            }
            p.compact_threshold = 0.0;
            CHECK_NOTHROW(make_engine(name, 4, p));
            p.compact_threshold = 1.0;
            CHECK_NOTHROW(make_engine(name, 4, p));
        }
    }
    // The other backends ignore both.
    um_params_t p = default_params();
    p.kernel = "bogus";
    CHECK(make_engine("list", 4, p)->stats().kernel == UM_KERNEL_NONE);

    char err[256] = "";
    p = default_params();
    p.kernel = "neon";
    CHECK(um_engine_create("fuzzy8", 4, &p, err, sizeof err) == nullptr);
    CHECK_THAT(std::string(err), Catch::Contains("auto, avx512, avx2, scalar"));
    um_kernel_t k = UM_KERNEL_NONE;
    int fell_back = 1;
    CHECK(um_kernel_select("neon", &k, &fell_back, err, sizeof err) == UM_ERR_ARG);
    CHECK_THAT(std::string(err), Catch::Contains("valid kernels are"));
    CHECK(um_kernel_select(nullptr, &k, &fell_back, err, sizeof err) == UM_OK);
    CHECK(k == simd::best(simd::cpu_features()).id);
    CHECK(fell_back == 0);
    CHECK(std::string(um_kernel_name(UM_KERNEL_AVX2)) == "avx2");
    CHECK(std::string(um_kernel_names()) == "auto, avx512, avx2, scalar");
}

TEST_CASE("fuzzy keys: source part over tag part, wildcards keep the other part", "[simd]") {
    using F32 = FuzzyEngine<uint32_t>;
    using F16 = FuzzyEngine<uint16_t>;
    using F8 = FuzzyEngine<uint8_t>;
    CHECK(F32::fast_key(0x123456, 0x1AB) == ((0x123456u << 8) | (0x1AB % 254))); // 24 rank bits, tag mod 254
    CHECK(F16::fast_key(300, 1000) == (((300 % 255) << 8) | (1000 % 254)));
    CHECK(F8::fast_key(20, 30) == (((20 % 15) << 4) | (30 % 14)));
    // The concatenated form tells (2, 1) from (1, 2), which the paper's xor folds could not.
    CHECK(F8::fast_key(2, 1) != F8::fast_key(1, 2));
    CHECK(F16::fast_key(2, 1) != F16::fast_key(1, 2));
    // A wildcard keeps the other field: ANY_SOURCE the tag part, ANY_TAG the source part.
    CHECK(F8::fast_key(UM_ANY_SOURCE, 3) == ((0xFu << 4) | 3));
    CHECK(F8::fast_key(UM_ANY_SOURCE, 3) == FuzzyKey<uint8_t>::any_source_key(3));
    CHECK(F16::fast_key(3, UM_ANY_TAG) == ((3u << 8) | 0xFF));
    CHECK(F16::fast_key(3, UM_ANY_TAG) == FuzzyKey<uint16_t>::any_tag_key(3));
    CHECK(F8::fast_key(UM_ANY_SOURCE, UM_ANY_TAG) == F8::kWild);
    CHECK(F32::fast_key(UM_ANY_SOURCE, UM_ANY_TAG) == F32::kWild);
    // No key of an exact or one-wildcard receive, or of a message, takes the match-all or the hole value,
    // and no exact key has a wildcard part.
    uint64_t reserved = 0;
    for (int32_t s = -1; s < 600; ++s) {
        for (int32_t t = -10; t < 600; ++t) {
            if (s == UM_ANY_SOURCE && t == UM_ANY_TAG) {
                continue;
            }
            const uint8_t k8 = F8::fast_key(s, t);
            const uint16_t k16 = F16::fast_key(s, t);
            const uint32_t k32 = F32::fast_key(s, t);
            reserved += k8 == F8::kWild || k8 == F8::kHole || k16 == F16::kWild || k16 == F16::kHole ||
                        k32 == F32::kWild || k32 == F32::kHole;
            if (s != UM_ANY_SOURCE && t != UM_ANY_TAG) {
                reserved += (k8 >> 4) == 0xF || (k8 & 0xF) >= 0xE || (k16 >> 8) == 0xFF || (k16 & 0xFF) >= 0xFE;
            }
        }
    }
    CHECK(reserved == 0);
}

namespace {
// Sources and tags whose fast keys collide with (s, t): the part ranges' periods.
struct Period {
    int32_t src;
    int32_t tag;
};
Period period_of(const std::string &name) { return name == "fuzzy8" ? Period{15, 14} : Period{255, 254}; }
} // namespace

TEST_CASE("fuzzy: colliding fast keys are verified and counted", "[simd]") {
    SECTION("sources a period apart: (1, 2) and (1 + P, 2)") {
        for (const char *name : {"fuzzy16", "fuzzy8"}) {
            DYNAMIC_SECTION(name) {
                const int32_t far = 1 + period_of(name).src;
                Driver d(name);
                d.post(1, 2, 1);
                CHECK(d.arrive(far, 2, 100) == nullptr); // fast hit on the receive (1, 2), refuted
                CHECK(d.false_positives() == 1);
                CHECK(d.e->stats().unexpected_len == 1);
                CHECK(d.post(far, 2, 2) == h(100)); // a fast hit that holds
                CHECK(d.false_positives() == 1);
                CHECK(d.arrive(1, 2, 101) == h(1));
                CHECK(d.false_positives() == 1);
                CHECK(d.e->stats().posted_len == 0);
                CHECK(d.e->stats().unexpected_len == 0);
            }
        }
    }
    SECTION("posted receives in one block: the match after the false positives") {
        for (const char *name : {"fuzzy16", "fuzzy8"}) {
            DYNAMIC_SECTION(name) {
                const Period p = period_of(name);
                Driver d(name);
                d.post(1, 2, 1);
                d.post(1, 2 + p.tag, 2); // same key as (1, 2) and (1 + P, 2)
                d.post(1 + p.src, 2, 3);
                CHECK(d.arrive(1 + p.src, 2, 100) == h(3));
                CHECK(d.false_positives() == 2);
                CHECK(d.arrive(1, 2 + p.tag, 101) == h(2));
                CHECK(d.false_positives() == 3);
            }
        }
    }
    SECTION("unexpected messages: an exact receive verifies its fast hits") {
        for (const char *name : {"fuzzy16", "fuzzy8"}) {
            DYNAMIC_SECTION(name) {
                const Period p = period_of(name);
                Driver d(name);
                d.arrive(2 + p.src, 1, 100);
                d.arrive(2, 1 + p.tag, 101);
                CHECK(d.post(2, 1, 1) == nullptr);
                CHECK(d.false_positives() == 2);
                CHECK(d.post(2, 1 + p.tag, 2) == h(101));
                CHECK(d.false_positives() == 3);
                CHECK(d.e->stats().posted_len == 1);
                CHECK(d.arrive(2, 1, 102) == h(1));
            }
        }
    }
    SECTION("ANY_SOURCE receives keep filtering by tag") {
        for (const char *name : kFuzzyBackends) {
            DYNAMIC_SECTION(name) {
                Driver d(name);
                for (uintptr_t i = 0; i < 10; ++i) {
                    d.post(UM_ANY_SOURCE, static_cast<int32_t>(1 + i), 1 + i);
                }
                d.post(3, 0, 50);
                CHECK(d.arrive(3, 0, 100) == h(50)); // passes ten ANY_SOURCE receives of other tags
                CHECK(d.false_positives() == 0);
                CHECK(d.arrive(7, 5, 101) == h(5));
                CHECK(d.false_positives() == 0);
            }
        }
    }
    SECTION("fuzzy32: tags equal modulo 254") {
        Driver d("fuzzy32");
        d.post(1, 2, 1);
        CHECK(d.arrive(2, 1, 100) == nullptr); // different keys: no false positive
        CHECK(d.false_positives() == 0);
        d.post(5, 254 + 7, 2);
        CHECK(d.arrive(5, 7, 101) == nullptr);
        CHECK(d.false_positives() == 1);
        CHECK(d.arrive(5, 254 + 7, 102) == h(2));
    }
    SECTION("a wildcard receive in the unexpected queue compares full keys") {
        for (const char *name : kFuzzyBackends) {
            DYNAMIC_SECTION(name) {
                Driver d(name);
                d.arrive(1, 2, 100);
                d.arrive(2, 1, 101);
                d.arrive(2, -3, 102);
                CHECK(d.post(UM_ANY_SOURCE, 1, 1) == h(101));
                CHECK(d.post(2, UM_ANY_TAG, 2) == nullptr); // (2, -3) is collective
                CHECK(d.false_positives() == 0);
            }
        }
    }
}

TEST_CASE("fuzzy: ANY_TAG never matches a negative tag, though its fast key hits",
          "[simd]") {
    for (const char *name : kFuzzyBackends) {
        DYNAMIC_SECTION(name) {
            Driver d(name);
            d.post(UM_ANY_SOURCE, UM_ANY_TAG, 1);
            d.post(0, UM_ANY_TAG, 2);
            CHECK(d.arrive(0, -5, 100) == nullptr);
            CHECK(d.false_positives() == 2); // both match-all keys hit, both refuted
            CHECK(d.arrive(0, -1000000, 101) == nullptr);
            CHECK(d.arrive(0, INT32_MIN, 102) == nullptr);
            CHECK(d.arrive(0, 5, 103) == h(1));
            CHECK(d.arrive(0, 0, 104) == h(2));
            CHECK(d.post(UM_ANY_SOURCE, UM_ANY_TAG, 3) == nullptr);
            CHECK(d.post(0, UM_ANY_TAG, 4) == nullptr);
            CHECK(d.post(0, -1000000, 5) == h(101));
            CHECK(d.e->stats().unexpected_len == 2);
            CHECK(d.e->stats().posted_len == 2);
        }
    }
}

TEST_CASE("search depth: the slots before the match, holes included", "[simd]") {
    for (const char *name : kSimdBackends) {
        DYNAMIC_SECTION(name) {
            Driver d(name);
            for (uintptr_t i = 0; i < 200; ++i) {
                d.post(2, static_cast<int32_t>(10 + i), 1 + i);
            }
            uint32_t inspected = 0;
            CHECK(d.arrive(2, 10 + 150, 1000, &inspected) == h(151));
            CHECK(inspected == 151);
            CHECK(d.arrive(2, 10 + 160, 1001, &inspected) == h(161));
            CHECK(inspected == 161); // the hole of 150 still counts
            CHECK(d.arrive(2, 5, 1002, &inspected) == nullptr);
            CHECK(inspected == 200);
        }
    }
}

TEST_CASE("blocks: an empty block is freed, holes stay until compaction", "[simd]") {
    for (const char *name : kSimdBackends) {
        DYNAMIC_SECTION(name) {
            Driver d(name);
            for (uintptr_t i = 0; i < 65; ++i) {
                d.post(0, static_cast<int32_t>(i), 1 + i);
            }
            CHECK(d.e->stats().blocks == 2);
            CHECK(d.arrive(0, 64, 1000) == h(65)); // the only element of the second block
            CHECK(d.e->stats().blocks == 1);
            CHECK(d.arrive(0, 10, 1001) == h(11));
            CHECK(d.e->stats().holes == 1);
            CHECK(d.arrive(0, 63, 1002) == h(64)); // the last slot: trailing holes go too
            CHECK(d.e->stats().holes == 1);        // 10 is not trailing
            for (int32_t t = 0; t < 63; ++t) {
                if (t != 10) {
                    CHECK(d.arrive(0, t, 2000 + static_cast<uintptr_t>(t)) != nullptr);
                }
            }
            const um_stats_t s = d.e->stats();
            CHECK(s.blocks == 0);
            CHECK(s.holes == 0);
            CHECK(s.posted_len == 0);
        }
    }
}

TEST_CASE("compaction: long-lived elements behind removed ones", "[simd]") {
    // 100 blocks; every block keeps its last element, the 63 before it are matched.
    constexpr int32_t kBlocks = 100;
    const auto fill_and_thin = [](Driver &d) {
        for (int32_t i = 0; i < kBlocks * 64; ++i) {
            d.post(0, i, 1 + static_cast<uintptr_t>(i));
        }
        for (int32_t i = 0; i < kBlocks * 64; ++i) {
            if (i % 64 != 63) {
                REQUIRE(d.arrive(0, i, 100000 + static_cast<uintptr_t>(i)) ==
                        h(1 + static_cast<uintptr_t>(i)));
            }
        }
    };
    for (const char *name : kSimdBackends) {
        DYNAMIC_SECTION(name << ", compaction off") {
            Driver d(name, with_threshold(1.0));
            fill_and_thin(d);
            const um_stats_t s = d.e->stats();
            CHECK(s.posted_len == kBlocks);
            CHECK(s.blocks == kBlocks);
            CHECK(s.holes == kBlocks * 63);
            CHECK(s.compactions == 0);
            uint32_t inspected = 0;
            CHECK(d.arrive(1, 0, 1, &inspected) == nullptr);
            CHECK(inspected == kBlocks * 64);
        }
        DYNAMIC_SECTION(name << ", compaction at half holes") {
            Driver d(name, with_threshold(0.5));
            fill_and_thin(d);
            const um_stats_t s = d.e->stats();
            CHECK(s.posted_len == kBlocks);
            CHECK(s.blocks <= 4);
            CHECK(s.holes <= kBlocks);
            CHECK(s.compactions > 0);
            uint32_t inspected = 0;
            CHECK(d.arrive(1, 0, 1, &inspected) == nullptr);
            CHECK(inspected <= 2 * kBlocks);
            // Compaction kept the order.
            const Snapshot snap = d.e->snapshot();
            REQUIRE(snap.posted.size() == kBlocks);
            for (int32_t b = 0; b < kBlocks; ++b) {
                CHECK(snap.posted[static_cast<size_t>(b)].tag == b * 64 + 63);
            }
            CHECK(d.arrive(0, 63, 2) == h(64));
            CHECK(d.arrive(0, 64 * 99 + 63, 3) == h(64 * 100));
        }
    }
}

TEST_CASE("SIMD statistics: in stats, dump and memory", "[simd]") {
    Driver d("fuzzy8", default_params(), 64);
    d.post(1, 2, 1);
    d.arrive(16, 2, 100); // 16 = 1 + 15: the same 4-bit source part

    std::ostringstream out;
    d.e->dump(out);
    CHECK_THAT(out.str(), Catch::Contains("kernel " + std::string(simd::best(simd::cpu_features()).name)) &&
                              Catch::Contains("blocks 2") && Catch::Contains("false positives 1"));
    CHECK(make_engine("perpeer", 64, default_params())->stats().blocks == 0);
    // Per element, fuzzy8 holds a key, source, tag and handle (18 bytes): well under
    // half of a list element (56).
    Driver list("list", default_params(), 64);
    Driver fuzzy("fuzzy8", default_params(), 64);
    const uint64_t list0 = list.e->stats().bytes;
    const uint64_t fuzzy0 = fuzzy.e->stats().bytes;
    for (uintptr_t i = 0; i < 8192; ++i) {
        list.post(1, static_cast<int32_t>(i), 1 + i);
        fuzzy.post(1, static_cast<int32_t>(i), 1 + i);
    }
    const double list_per = static_cast<double>(list.e->stats().bytes - list0) / 8192;
    const double fuzzy_per = static_cast<double>(fuzzy.e->stats().bytes - fuzzy0) / 8192;
    CHECK(fuzzy_per < 20);
    CHECK(fuzzy_per < list_per / 2.5);
}

// StageChoice (stage_choice.h): the way of streamed rows, chosen by measuring.
// Driven here by a model of the two ways' costs; the protocol's use of it is
// tested with the arena (arena_tests.cc).
#include "ompi/mca/pml/ubermatch/protocol/stage_choice.h"
#include "test/protocol/pair.h"

#include <string>

using ubermatch::protocol::StageChoice;

namespace {

// n sends of `bytes`, each measured at its way's cost (ticks per KiB);
// returns how many went through the stage.
int run(StageChoice &c, int n, uint64_t staged_cost, uint64_t straight_cost, size_t bytes = 32768) {
    int staged = 0;
    for (int i = 0; i < n; ++i) {
        const bool way = c.staged();
        staged += way;
        c.measured(way, (way ? staged_cost : straight_cost) * bytes / 1024, bytes);
    }
    return staged;
}

} // namespace

TEST_CASE("stage choice: the cheaper way (straight by a tenth), the other for 2 of every 64", "[protocol][stage]") {
    constexpr int kTrialsIn640 = 640 / StageChoice::kPeriod * StageChoice::kTrials;
    for (const uint64_t straight : {uint64_t{120}, uint64_t{95}}) {
        INFO("straight at " << straight << "% of the stage's cost (cheaper only below 90%): the stage, straight only "
             "in the trials");
        StageChoice c;
        CHECK(run(c, 640, 100, straight) == 640 - kTrialsIn640);
        CHECK(c.cheaper_staged());
    }
    {
        INFO("straight cheaper (0.6x): the stage only in the trials (and the first measurement of it)");
        StageChoice c;
        const int staged = run(c, 640, 100, 60);
        // The first period's trials went straight: the stage, not measured, counted cheaper.
        CHECK(staged == kTrialsIn640 - StageChoice::kTrials + 1);
        CHECK(!c.cheaper_staged());
    }
    {
        INFO("a change of machine: the choice follows within a few periods");
        StageChoice c;
        run(c, 640, 100, 60);
        REQUIRE(!c.cheaper_staged());
        run(c, 320, 100, 200); // straight now twice the stage's cost
        CHECK(run(c, 640, 100, 200) == 640 - kTrialsIn640);
        CHECK(c.cheaper_staged());
    }
    {
        INFO("one send of the chosen way 40 times as slow (preempted): the choice holds");
        StageChoice c;
        run(c, 640, 100, 60);
        REQUIRE(!c.cheaper_staged());
        c.measured(false, 60 * 40 * 32, 32768);
        CHECK(!c.cheaper_staged());
        CHECK(run(c, 640, 100, 60) == kTrialsIn640);
    }
    {
        INFO("nothing measured yet: the first sends try both ways");
        StageChoice c;
        bool seen[2] = {false, false};
        for (int i = 0; i < 4; ++i) {
            const bool way = c.staged();
            seen[way] = true;
            c.measured(way, 1000, 4096);
        }
        CHECK(seen[0]);
        CHECK(seen[1]);
    }
}

TEST_CASE("stage choice: a way other than measure, always and never is refused at creation", "[protocol][stage]") {
    um_proto_config_t c{};
    c.backend = "auto";
    um_params_init(&c.params);
    c.shm_pack_stage = 3;
    um_proto_t *p = nullptr;
    char err[256] = "";
    CHECK(um_proto_create(&c, &prototest::kCallbacks, &p, err, sizeof err) == UM_PROTO_ERROR);
    CHECK(std::string(err).find("shm_pack_stage 3 is not valid: 0 (measure), 1 (always), 2 (never)") !=
          std::string::npos);
    CHECK(p == nullptr);
}

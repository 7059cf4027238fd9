// Command-line settings shared by the engine test programs.
#ifndef UBERMATCH_TEST_OPTIONS_H
#define UBERMATCH_TEST_OPTIONS_H

#include <cstdint>

namespace ubermatch::test {

struct Options {
    uint64_t ops = 1000000;  // per backend, split over the standard mixes (--ops)
    uint64_t seed = 20191; // base seed of the random sequences (--seed)
    unsigned jobs = 0;     // differential and batch runs at once (--jobs); 0: one per CPU this process may use
};

Options &options();

} // namespace ubermatch::test

#endif

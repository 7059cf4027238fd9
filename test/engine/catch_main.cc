// Catch2 main of the engine tests, with --ops N (operations per backend in the
// differential test; 100000000 for a soak), --long (10^7), --seed S and
// --jobs J (its and the batch tests' runs at once).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "test/engine/test_options.h"

namespace ubermatch::test {
Options &options() {
    static Options o;
    return o;
}
} // namespace ubermatch::test

int main(int argc, char *argv[]) {
    Catch::Session session;
    auto &o = ubermatch::test::options();
    bool long_run = false;
    using Catch::clara::Opt;
    session.cli(session.cli() |
                Opt(o.ops, "n")["--ops"]("operations per backend in the differential test") |
                Opt(o.seed, "s")["--seed"]("base seed of the randomized operation sequences") |
                Opt(o.jobs, "j")["--jobs"]("differential and batch test runs at once (default: one per CPU this process may use)") |
                Opt(long_run)["--long"]("10^7 operations per backend (the reliability run; minutes)"));
    if (const int rc = session.applyCommandLine(argc, argv); rc != 0) {
        return rc;
    }
    if (long_run) {
        o.ops = 10000000;
    }
    return session.run();
}

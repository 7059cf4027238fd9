// Temporary directories for the trace tests (trace_tests.cc,
// trace_writer_tests.cc): one made fresh and removed with what it holds, and
// a recording into one, on from construction until stop() or scope's end.
#ifndef UBERMATCH_TEST_ENGINE_TRACE_TEST_DIR_H
#define UBERMATCH_TEST_ENGINE_TRACE_TEST_DIR_H

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "matching/trace.h"

struct TempDir {
    TempDir() {
        char tmpl[] = "/tmp/um-trace-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    std::string path;
};

// Engines created while it is on record into dir (direct: trace::start's).
inline ubermatch::trace::WriteMode write_mode(bool direct) {
    return direct ? ubermatch::trace::WriteMode::direct : ubermatch::trace::WriteMode::buffered;
}

struct Recording {
    explicit Recording(bool threads, bool direct = true) {
        std::string err;
        REQUIRE(ubermatch::trace::start(dir.c_str(), threads, err, write_mode(direct)));
    }
    ~Recording() { stop(); }
    // Engines created from now on record nothing (the files stay until the end of scope).
    void stop() {
        std::string err;
        ubermatch::trace::start("", false, err);
    }
    TempDir tmp;
    const std::string dir = tmp.path;
};

#endif

// Is a backend flat in queue depth? Time per matched pair (one post_recv and
// one arrive) behind N queued entries that never match, N = 1, 2, 4 .. 65536,
// for the shapes of issue 12 item 3:
//
//   posted-exact     N exact receives posted (sources round-robin, tags >= 1);
//                    the pair posts receive (0, 0) and a message (0, 0) arrives.
//   posted-anysrc    N MPI_ANY_SOURCE receives with tags >= 1, same pair.
//   posted-anytag    N MPI_ANY_TAG receives from sources >= 1, same pair.
//   posted-mix10/50  10% / 50% of the N receives are wildcards (alternately
//                    ANY_SOURCE and ANY_TAG as above), the rest exact.
//   unexp-exact      N unexpected messages (sources round-robin, tags >= 1);
//                    message (0, 0) arrives, then receive (0, 0) is posted.
//   unexp-anysrc     same N; the pair's receive is (ANY_SOURCE, 0).
//   unexp-anytag     N messages from sources >= 1; the receive is (0, ANY_TAG).
//   unexp-mix10/50   the pair's receive is a wildcard every 10th / 2nd time.
//
//   depth_sweep [--backends a,b] [--shapes a,b] [--max N] [--ms T] [--csv FILE]
//
// Prints per backend and shape the ns per pair at each depth, the largest
// growth from one depth to the next (t(2N)/t(N)), and the growth per doubling
// from N = 16 to the largest (the geometric mean, (t(max)/t(16))^(1/doublings));
// below 16 the pair's fixed cost (some tens of ns) hides the search.
// Issue 12's goal for `auto`: <= 1.2x per doubling on every shape.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "matching/registry.h"

using namespace ubermatch;

namespace {

constexpr int32_t kCommSize = 1024;
constexpr int32_t kSources = 64;

void *h(uintptr_t v) { return reinterpret_cast<void *>(v); }

void check(int rc, const char *what) {
    if (rc != UM_OK) {
        throw std::runtime_error(std::string(what) + ": " + um_status_string(rc));
    }
}

struct Shape {
    const char *name;
    bool posted;   // the N entries are receives (else messages)
    int wild_pct;  // posted: share of wildcard receives; unexpected: share of wildcard pair receives
    int wild_kind; // 0: alternate, 1: ANY_SOURCE only, 2: ANY_TAG only
};

const Shape kShapes[] = {
    {"posted-exact", true, 0, 0},   {"posted-anysrc", true, 100, 1}, {"posted-anytag", true, 100, 2},
    {"posted-mix10", true, 10, 0},  {"posted-mix50", true, 50, 0},   {"unexp-exact", false, 0, 0},
    {"unexp-anysrc", false, 100, 1}, {"unexp-anytag", false, 100, 2}, {"unexp-mix10", false, 10, 0},
    {"unexp-mix50", false, 50, 0},
};

// Entry i of the N: from sources 1 .. kSources-1 with tags >= 1, so that none
// matches the pair's (0, 0), (ANY_SOURCE, 0) or (0, ANY_TAG); posted wildcards
// keep the other field, which rules them out.
void filler(const Shape &s, int64_t i, int32_t &source, int32_t &tag) {
    source = static_cast<int32_t>(1 + i % (kSources - 1));
    tag = static_cast<int32_t>(1 + i / kSources);
    if (!s.posted || s.wild_pct == 0) {
        return;
    }
    const bool wild = s.wild_pct == 100 || (i * s.wild_pct / 100) != ((i + 1) * s.wild_pct / 100);
    if (!wild) {
        return;
    }
    const int kind = s.wild_kind != 0 ? s.wild_kind : (i % 2 == 0 ? 1 : 2);
    if (kind == 1) {
        source = UM_ANY_SOURCE;
    } else {
        tag = UM_ANY_TAG;
    }
}

// ns per matched pair behind `depth` entries.
double measure(const std::string &backend, const Shape &s, int64_t depth, double ms) {
    auto e = make_engine(backend, kCommSize, default_params());
    const um_hint_t hint{};
    um_match_t m{};
    for (int64_t i = 0; i < depth; ++i) {
        int32_t src;
        int32_t tag;
        filler(s, i, src, tag);
        if (s.posted) {
            check(e->post_recv(src, tag, hint, h(uintptr_t(i) + 16), &m), "post_recv (filler)");
        } else {
            check(e->arrive(src, tag, hint, h(uintptr_t(i) + 16), &m), "arrive (filler)");
        }
        if (m.handle != nullptr) {
            throw std::logic_error("a filler entry matched");
        }
    }
    void *const req = h(1);
    void *const msg = h(2);
    int64_t pairs = 0;
    int64_t batch = 64; // the first batch is a warm-up: the first search may restructure the queue
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    bool warm = false;
    while (elapsed < ms * 1e-3) {
        if (!warm && pairs > 0) {
            warm = true;
            pairs = 0;
            start = std::chrono::steady_clock::now();
        }
        for (int64_t b = 0; b < batch; ++b, ++pairs) {
            int32_t rs = 0;
            int32_t rt = 0;
            if (!s.posted && s.wild_pct > 0 &&
                (s.wild_pct == 100 || (pairs * s.wild_pct / 100) != ((pairs + 1) * s.wild_pct / 100))) {
                const int kind = s.wild_kind != 0 ? s.wild_kind : (pairs % 2 == 0 ? 1 : 2);
                (kind == 1 ? rs : rt) = kind == 1 ? UM_ANY_SOURCE : UM_ANY_TAG;
            }
            if (s.posted) {
                check(e->post_recv(0, 0, hint, req, &m), "post_recv");
                check(e->arrive(0, 0, hint, msg, &m), "arrive");
                if (m.handle != req) {
                    throw std::logic_error("the pair's message did not take its receive");
                }
            } else {
                check(e->arrive(0, 0, hint, msg, &m), "arrive");
                check(e->post_recv(rs, rt, hint, req, &m), "post_recv");
                if (m.handle != msg) {
                    throw std::logic_error("the pair's receive did not take its message");
                }
            }
        }
        elapsed = warm ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() : 0;
        batch *= 2;
    }
    return elapsed * 1e9 / static_cast<double>(pairs);
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        const size_t comma = s.find(',', pos);
        const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!item.empty()) {
            out.push_back(item);
        }
        if (comma == std::string::npos) {
            break;
        }
        pos = comma + 1;
    }
    return out;
}

int usage(const char *why) {
    std::fprintf(stderr,
                 "depth_sweep: %s\nusage: depth_sweep [--backends a,b] [--shapes a,b] [--max N] [--ms T] "
                 "[--csv FILE]\n  backends: %s\n  shapes:",
                 why, backend_names().c_str());
    for (const Shape &s : kShapes) {
        std::fprintf(stderr, " %s", s.name);
    }
    std::fprintf(stderr, "\n");
    return 2;
}

} // namespace

int main(int argc, char **argv) {
    std::vector<std::string> names = split("auto,list,bins,vector,fuzzy8");
    std::vector<const Shape *> shapes;
    int64_t max_depth = 65536;
    double ms = 20;
    const char *csv_path = nullptr;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (a + 1 >= argc) {
            return usage(("missing value after " + arg).c_str());
        }
        const std::string val = argv[++a];
        if (arg == "--backends") {
            names = split(val);
        } else if (arg == "--shapes") {
            for (const std::string &n : split(val)) {
                const Shape *found = nullptr;
                for (const Shape &s : kShapes) {
                    found = n == s.name ? &s : found;
                }
                if (found == nullptr) {
                    return usage(("unknown shape " + n).c_str());
                }
                shapes.push_back(found);
            }
        } else if (arg == "--max") {
            max_depth = std::atoll(val.c_str());
            if (max_depth < 16 || max_depth > (1 << 22)) {
                return usage("--max must be 16 .. 4194304");
            }
        } else if (arg == "--ms") {
            ms = std::atof(val.c_str());
            if (!(ms > 0 && ms <= 10000)) {
                return usage("--ms must be in (0, 10000]");
            }
        } else if (arg == "--csv") {
            csv_path = argv[a];
        } else {
            return usage(("unknown option " + arg).c_str());
        }
    }
    if (shapes.empty()) {
        for (const Shape &s : kShapes) {
            shapes.push_back(&s);
        }
    }
    FILE *csv = csv_path != nullptr ? std::fopen(csv_path, "w") : nullptr;
    if (csv_path != nullptr && csv == nullptr) {
        return usage((std::string("cannot write ") + csv_path).c_str());
    }
    if (csv != nullptr) {
        std::fprintf(csv, "backend,shape,depth,ns_per_pair\n");
    }
    std::printf("%-8s %-14s %10s %10s %10s %12s %12s\n", "backend", "shape", "ns@16", "ns@1024", "ns@max",
                "max step", "per doubling");
    try {
        for (const std::string &b : names) {
            make_engine(b, kCommSize, default_params()); // an unknown name stops here, naming the valid ones
            for (const Shape *s : shapes) {
                std::map<int64_t, double> t;
                for (int64_t d = 1; d <= max_depth; d *= 2) {
                    t[d] = measure(b, *s, d, ms);
                    if (csv != nullptr) {
                        std::fprintf(csv, "%s,%s,%lld,%.2f\n", b.c_str(), s->name, static_cast<long long>(d), t[d]);
                    }
                }
                double max_step = 0;
                for (int64_t d = 16; 2 * d <= max_depth; d *= 2) {
                    max_step = std::max(max_step, t[2 * d] / t[d]);
                }
                const double doublings = std::log2(static_cast<double>(max_depth) / 16.0);
                const double per = std::pow(t[max_depth] / t[16], 1.0 / doublings);
                std::printf("%-8s %-14s %10.1f %10.1f %10.1f %11.2fx %11.2fx\n", b.c_str(), s->name, t[16],
                            max_depth >= 1024 ? t[1024] : NAN, t[max_depth], max_step, per);
                std::fflush(stdout);
            }
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "depth_sweep: %s\n", e.what());
        return 1;
    }
    if (csv != nullptr) {
        std::fclose(csv);
    }
    return 0;
}

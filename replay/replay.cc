// ubermatch-replay: feeds a recorded matching trace (matching/trace.h) through
// every backend, engine alone, checks each makes the recorded matches, measures
// the search cost, and recommends a backend. Usage: README, "Matching traces".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "matching/registry.h"
#include "matching/trace.h"
#ifdef UM_HAVE_OTF2
#include "replay/otf2_export.h"
#endif

using namespace ubermatch;
using trace::TraceOp;
using trace::TraceRecord;

namespace {

const char *const kUsage =
    "usage: ubermatch-replay TRACE_DIR|FILE.umt [--backends a,b,...] [--params k=v,...] [--reps N] [--no-sweep] [--print]\n"
    "                       [--partial]  (read the files of a run that died before MPI_Finalize up to their cut)\n"
    "                       [--otf2 DIR] (write the trace as an OTF2 archive in DIR, new or empty, and stop)\n";

struct Result {
    std::string backend;
    std::string params; // "theta=10": a sweep point; "" the defaults (or --params)
    uint64_t ops = 0, inspected = 0, deepest = 0, bytes_hw = 0, queues_hw = 0, mismatches = 0;
    // A relaxed backend (--backends exact, ...): the calls it refused, which the
    // recorded run made (the trace breaks its assertion; what follows differs
    // as a consequence), and whether it may match equal keys out of order.
    const char *assertion = nullptr;
    uint64_t refused = 0;
    // Matches that differ where the job's own engine let equal keys overtake
    // (recorded at comm_create): the recorded order and the replayed one are
    // both right there.
    uint64_t reordered = 0;
    bool overtakes = false;
    // Matches that differ from the recorded ones and are no bug: a backend the
    // trace does not fit, or one that may overtake.
    bool excused() const { return refused != 0 || (overtakes && mismatches != 0); }
    bool fits() const { return mismatches == 0 && refused == 0; }
    double ns = 0;
    double ns_per_op() const { return ops != 0 ? ns / static_cast<double>(ops) : 0; }
};

// --params: the numeric um_params_t fields by name.
void set_param(um_params_t &p, const std::string &kv) {
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == kv.size()) {
        throw std::invalid_argument("--params: '" + kv + "' is not key=value");
    }
    const char *v = kv.c_str() + eq + 1;
    char *endp = nullptr;
    const double d = std::strtod(v, &endp);
    if (*endp != '\0') {
        throw std::invalid_argument("--params: " + k + "=" + v + " is not a number");
    }
    const auto i = static_cast<int64_t>(d);
    if (k == "bins") p.bins = i;
    else if (k == "theta") p.theta = i;
    else if (k == "k_c") p.k_c = i;
    else if (k == "k_p") p.k_p = i;
    else if (k == "index_at") p.index_at = i;
    else if (k == "list_at") p.list_at = i;
    else if (k == "max_index_bytes") p.max_index_bytes = i;
    else if (k == "index_rent") p.index_rent = i;
    else if (k == "compact_threshold") p.compact_threshold = d;
    else
        throw std::invalid_argument("--params: unknown parameter '" + k +
                                    "'; valid: bins, theta, k_c, k_p, index_at, list_at, "
                                    "max_index_bytes, index_rent, compact_threshold");
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

// A job's ranks and the jobs it spawned share the family of their job ids
// (its upper 16 bits in Open MPI 4.1); another family is another mpirun: a
// rerun into the same directory with fewer ranks leaves the earlier run's
// files of the ranks above. Files of before the job id (0) are not checked.
void check_one_run(const std::string &where, const std::vector<trace::TraceFile> &files) {
    std::map<uint32_t, std::vector<std::string>> runs;
    for (const auto &f : files) {
        if (f.header.job != 0) {
            runs[f.header.job >> 16].push_back(f.path.substr(f.path.rfind('/') + 1));
        }
    }
    if (runs.size() < 2) {
        return;
    }
    std::string what;
    for (const auto &[family, names] : runs) {
        what += "\n  run " + std::to_string(family) + ":";
        for (const std::string &n : names) {
            what += " " + n;
        }
    }
    throw std::runtime_error(where + ": the trace files are of " + std::to_string(runs.size()) +
                             " different runs (each rewrites its own ranks' files and leaves the others):" + what +
                             "\n  replay one run's files: remove the others, or record each run in a directory "
                             "of its own");
}

std::vector<trace::TraceFile> load(const std::string &where, bool partial) {
    std::vector<std::string> paths;
    struct stat st {};
    if (::stat(where.c_str(), &st) != 0) {
        throw std::runtime_error(where + ": no such file or directory");
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = ::opendir(where.c_str());
        for (dirent *e; d != nullptr && (e = ::readdir(d)) != nullptr;) {
            const std::string n = e->d_name;
            if (n.size() > 4 && n.compare(n.size() - 4, 4, ".umt") == 0) {
                paths.push_back(where + "/" + n);
            }
        }
        if (d != nullptr) {
            ::closedir(d);
        }
        if (paths.empty()) {
            throw std::runtime_error(where + ": no *.umt trace files in this directory");
        }
        std::sort(paths.begin(), paths.end());
    } else {
        paths.push_back(where);
    }
    uint64_t bytes = 0;
    for (const std::string &p : paths) {
        struct stat fs {};
        bytes += ::stat(p.c_str(), &fs) == 0 ? static_cast<uint64_t>(fs.st_size) : 0;
    }
    const bool big = bytes >= (256u << 20); // a long trace: say what takes the time
    const uint64_t t0 = Timers::now_ns();
    if (big) {
        std::fprintf(stderr, "reading %s: %zu files, %llu MiB\n", where.c_str(), paths.size(),
                     static_cast<unsigned long long>(bytes >> 20));
    }
    std::vector<trace::TraceFile> files;
    for (const std::string &p : paths) {
        files.push_back(trace::read_file(p, partial));
    }
    if (big) {
        std::fprintf(stderr, "read in %.1f s\n", 1e-9 * static_cast<double>(Timers::now_ns() - t0));
    }
    std::sort(files.begin(), files.end(), [](const trace::TraceFile &a, const trace::TraceFile &b) {
        return a.header.job != b.header.job ? a.header.job < b.header.job : a.header.rank < b.header.rank;
    });
    check_one_run(where, files);
    return files;
}

std::string who(int32_t v, int32_t any) { return v == any ? "ANY" : std::to_string(v); }

// What a file cut short (its run died, or was killed in a hang) left queued:
// the receives still waiting and the messages no receive took, per
// communicator, from the recorded matches alone. A hang shows as the receives
// each rank waits for.
void report_cut(const trace::TraceFile &f) {
    struct Left {
        uint32_t cid;
        bool posted;
        int32_t source, tag;
    };
    std::map<uint64_t, Left> queued; // by id: in posting/arrival order
    for (const TraceRecord &r : f.records) {
        const auto op = static_cast<TraceOp>(r.op);
        if ((op == TraceOp::post_recv || op == TraceOp::arrive || op == TraceOp::mprobe) && r.matched != 0) {
            queued.erase(r.matched);
        }
        if ((op == TraceOp::post_recv || op == TraceOp::arrive) && r.result == 0) {
            queued[r.id] = {r.cid, op == TraceOp::post_recv, r.source, r.tag};
        } else if (op == TraceOp::cancel && r.result == 1) {
            queued.erase(r.id);
        }
    }
    std::map<std::pair<uint32_t, bool>, std::vector<std::string>> by_comm;
    for (const auto &[id, q] : queued) {
        (void) id;
        by_comm[{q.cid, q.posted}].push_back("(" + who(q.source, UM_ANY_SOURCE) + ", " + who(q.tag, UM_ANY_TAG) + ")");
    }
    std::printf("rank %d at the cut:%s\n", f.header.rank, by_comm.empty() ? " nothing queued" : "");
    for (const auto &[key, list] : by_comm) {
        std::printf("  communicator %u: %zu %s (source, tag):", key.first, list.size(),
                    key.second ? "receives waiting" : "messages no receive took");
        for (size_t i = 0; i < list.size() && i < 8; ++i) {
            std::printf(" %s", list[i].c_str());
        }
        std::printf("%s\n", list.size() > 8 ? " ..." : "");
    }
}
// "?": the recorded match names an element that was not queued (trace::kUnknownId).
std::string id_text(uint64_t id) { return id == trace::kUnknownId ? "?" : std::to_string(id); }

void print(const std::vector<trace::TraceFile> &files) {
    std::printf("# rank t_ns cid op source tag coll msg_size comm_size id matched result\n");
    for (const auto &f : files) {
        std::printf("# %s: rank %d of job %u, recorded with %s, %zu events, %s\n", f.path.c_str(), f.header.rank,
                    f.header.job, f.header.backend, f.records.size(),
                    f.cut ? "cut (the run died: the events after its last write are not here)"
                          : (std::to_string(f.dropped) + " dropped").c_str());
        for (const TraceRecord &r : f.records) {
            std::printf("%d %llu %u %s %s %s %u %u %u %llu %s %u\n", f.header.rank,
                        static_cast<unsigned long long>(r.t_ns), r.cid, trace::op_name(r.op),
                        who(r.source, UM_ANY_SOURCE).c_str(), who(r.tag, UM_ANY_TAG).c_str(), r.coll,
                        r.msg_size, r.hint_comm_size, static_cast<unsigned long long>(r.id),
                        id_text(r.matched).c_str(), r.result);
        }
    }
}

// A long trace (4 M events or more) shows how far each backend's replay got:
// on a terminal a bar with the time left, elsewhere (a log) a line per backend.
class Progress {
public:
    Progress(uint64_t total, const std::string &label)
        : on_(total >= (1u << 22)), tty_(::isatty(2) != 0), total_(total), label_(label),
          t0_(Timers::now_ns()) {} // total 0: a repetition, nothing shown
    void at(uint64_t done) {
        if (on_ && tty_) {
            const int pct = static_cast<int>(100 * done / total_);
            const double s = 1e-9 * static_cast<double>(Timers::now_ns() - t0_);
            std::fprintf(stderr, "\r%-24s [%-50s] %3d%% %6.0f s left", label_.c_str(),
                         std::string(static_cast<size_t>(pct / 2), '#').c_str(), pct,
                         s * static_cast<double>(total_ - done) / static_cast<double>(done));
        }
    }
    ~Progress() {
        if (on_ && tty_) {
            std::fprintf(stderr, "\r%-90s\r", "");
        } else if (on_) {
            std::fprintf(stderr, "replayed %s: %llu events in %.1f s\n", label_.c_str(),
                         static_cast<unsigned long long>(total_),
                         1e-9 * static_cast<double>(Timers::now_ns() - t0_));
        }
    }
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;

private:
    const bool on_, tty_;
    const uint64_t total_;
    const std::string label_;
    const uint64_t t0_;
};

// The operations whose record's result says matched (1), not (0) or refused (2).
bool is_search(uint8_t op) {
    switch (static_cast<TraceOp>(op)) {
    case TraceOp::post_recv:
    case TraceOp::arrive:
    case TraceOp::probe:
    case TraceOp::mprobe: return true;
    default: return false;
    }
}

void sample(const Engine &e, Result &res) {
    const um_stats_t s = e.stats();
    res.bytes_hw = std::max<uint64_t>(res.bytes_hw, s.bytes);
    res.queues_hw = std::max<uint64_t>(res.queues_hw, s.queues);
}

void harvest(const Engine &e, Result &res) {
    const um_stats_t s = e.stats();
    res.inspected += s.p2p.inspected + s.coll.inspected;
    res.deepest = std::max({res.deepest, s.p2p.max_inspected, s.coll.max_inspected});
    sample(e, res);
}

// A communicator's engines as the PML keeps them: one, or beside a relaxed
// engine one of Open MPI's own traffic (negative tags: the split is exact),
// each recorded with its own comm_create under the communicator's cid.
struct ReplayComm {
    std::unique_ptr<Engine> main, internal;
    int32_t size = 0;
    bool overtaking = false; // the job's main engine let equal keys overtake
    Engine &engine_for(int32_t tag) { return internal && tag < 0 && tag != UM_ANY_TAG ? *internal : *main; }
    template <class F>
    void each(F f) const {
        for (const auto *e : {&main, &internal}) {
            if (*e) {
                f(**e);
            }
        }
    }
};

// One backend over every rank's events; memory and queues are sampled every
// 2^16 events (outside the timed part).
Result replay(const std::vector<trace::TraceFile> &files, const std::string &backend, const um_params_t &params,
              const std::string &label, uint64_t total) {
    Result res;
    res.backend = backend;
    for (const Backend &b : backends()) {
        if (backend == b.name) {
            res.assertion = b.assertion;
        }
    }
    res.overtakes = (relaxations_of(backend) & kOvertaking) != 0;
    Progress bar(total, backend + label);
    uint64_t done = 0;
    for (const auto &f : files) {
        std::unordered_map<uint32_t, ReplayComm> comms;
        uint32_t last_cid = UINT32_MAX;
        ReplayComm *c = nullptr;
        auto mismatch = [&](size_t i, const TraceRecord &r, uint64_t got) {
            // A relaxed backend's differences are consequences of its refusals
            // or its overtaking: shown only where they can be neither.
            const bool shown = res.assertion == nullptr || (!res.overtakes && res.refused == 0);
            if (res.mismatches++ < 5 && shown) {
                std::fprintf(stderr,
                             "MISMATCH %s: %s rank %d event %zu (%s cid %u source %s tag %s): recorded match %s, "
                             "replay %llu\n",
                             backend.c_str(), f.path.c_str(), f.header.rank, i, trace::op_name(r.op), r.cid,
                             who(r.source, UM_ANY_SOURCE).c_str(), who(r.tag, UM_ANY_TAG).c_str(),
                             id_text(r.matched).c_str(), static_cast<unsigned long long>(got));
            }
        };
        const size_t n = f.records.size();
        for (size_t begin = 0; begin < n; begin += 1u << 16) {
            const size_t end = std::min(n, begin + (1u << 16));
            const uint64_t t0 = Timers::now_ns();
            uint64_t untimed = 0;
            for (size_t i = begin; i < end; ++i) {
                const TraceRecord &r = f.records[i];
                if (r.op == static_cast<uint8_t>(TraceOp::comm_create)) {
                    // A new communicator, a freed one's id reused, or an engine
                    // swapped (MPI_Comm_set_info: its queued elements are posted
                    // again after this).
                    ReplayComm &rc = comms[r.cid];
                    const bool internal = (r.result & trace::kInternalEngine) != 0;
                    if (!internal && rc.internal && rc.size != r.tag) { // reused by another size
                        harvest(*rc.internal, res);
                        rc.internal.reset();
                    }
                    std::unique_ptr<Engine> &slot = internal ? rc.internal : rc.main;
                    if (slot) {
                        harvest(*slot, res);
                    }
                    const uint64_t c0 = Timers::now_ns(); // creation is not matching: left out
                    // A relaxed backend replayed keeps Open MPI's traffic on auto,
                    // as the PML does with it (that traffic makes no assertion).
                    const bool relaxed = res.assertion != nullptr;
                    slot = make_engine(internal && relaxed ? "auto" : backend, r.tag, params);
                    if (!internal && relaxed && !rc.internal) {
                        rc.internal = make_engine("auto", r.tag, params);
                    }
                    untimed += Timers::now_ns() - c0;
                    if (!internal) {
                        rc.size = r.tag;
                        rc.overtaking = (r.result & kOvertaking) != 0;
                    }
                    c = &rc;
                    last_cid = r.cid;
                    continue;
                }
                if (r.cid != last_cid) {
                    const auto it = comms.find(r.cid);
                    if (it == comms.end() || !it->second.main) {
                        throw std::runtime_error(f.path + ": corrupt: event " + std::to_string(i) +
                                                 " on communicator " + std::to_string(r.cid) + " before its creation");
                    }
                    c = &it->second;
                    last_cid = r.cid;
                }
                if (r.result == 2 && is_search(r.op)) {
                    continue; // refused in the job (a relaxed engine's assertion): nothing was queued
                }
                const bool collective = r.op == static_cast<uint8_t>(TraceOp::coll_begin) ||
                                        r.op == static_cast<uint8_t>(TraceOp::coll_end);
                Engine *const e = collective && c->internal ? c->internal.get() : &c->engine_for(r.tag);
                um_hint_t hint{r.coll, 0, r.msg_size, r.hint_comm_size};
                um_match_t m{};
                void *const h = reinterpret_cast<void *>(static_cast<uintptr_t>(r.id));
                int st = UM_OK;
                switch (static_cast<TraceOp>(r.op)) {
                case TraceOp::comm_create: // handled above
                case TraceOp::end:         // these six are never among read_file's records
                case TraceOp::context:
                case TraceOp::time:
                case TraceOp::high:
                case TraceOp::wide:
                case TraceOp::base: break;
                case TraceOp::post_recv: st = e->post_recv(r.source, r.tag, hint, h, &m); break;
                case TraceOp::arrive: st = e->arrive(r.source, r.tag, hint, h, &m); break;
                case TraceOp::probe: st = e->probe(r.source, r.tag, hint, &m); break;
                case TraceOp::mprobe: st = e->mprobe(r.source, r.tag, hint, &m); break;
                case TraceOp::cancel: {
                    bool removed = false;
                    e->cancel(r.source, r.tag, h, &removed);
                    if (removed != (r.result == 1)) {
                        mismatch(i, r, removed);
                    }
                    ++res.ops;
                    continue;
                }
                case TraceOp::coll_begin: e->collective_begin(hint); break;
                case TraceOp::coll_end: e->collective_end(hint); break;
                }
                ++res.ops;
                if (__builtin_expect(st == UM_ERR_ASSERTION, 0) && r.result != 2) {
                    ++res.refused; // the recorded run made it: not a match to compare
                    continue;
                }
                const auto got = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(m.handle));
                if (__builtin_expect(got != r.matched, 0)) {
                    if (c->overtaking && e == c->main.get()) {
                        ++res.reordered;
                    } else {
                        mismatch(i, r, got);
                    }
                }
            }
            res.ns += static_cast<double>(Timers::now_ns() - t0 - untimed);
            for (const auto &kv : comms) {
                kv.second.each([&](const Engine &x) { sample(x, res); });
            }
            done += end - begin;
            bar.at(done);
        }
        for (const auto &kv : comms) {
            kv.second.each([&](const Engine &x) { harvest(x, res); });
        }
    }
    return res;
}

// The fastest of reps replays (a short trace is replayed several times so the
// time per operation is not one cold pass).
Result replay_best(const std::vector<trace::TraceFile> &files, const std::string &backend, const um_params_t &params,
                   const std::string &kv, uint64_t total, int reps) {
    Result best = replay(files, backend, params, kv.empty() ? "" : " " + kv, total);
    for (int i = 1; i < reps; ++i) {
        const Result r = replay(files, backend, params, "", 0);
        best.ns = std::min(best.ns, r.ns);
    }
    best.params = kv;
    return best;
}

// The small sweeps of the adaptive backends' parameters.
struct Sweep {
    const char *backend;
    const char *param;
    int64_t um_params_t::*field;
    std::vector<int64_t> values; // the default one is left out
};
const std::vector<Sweep> kSweeps = {
    {"auto", "index_at", &um_params_t::index_at, {4, 32, 256}},
    {"auto", "index_rent", &um_params_t::index_rent, {0, 4, 16}},
    {"pnp", "theta", &um_params_t::theta, {10, 100, 1000}},
    {"col", "k_c", &um_params_t::k_c, {2, 8, 32}},
};

void advise(std::vector<Result> results, const std::string &recorded) {
    std::stable_sort(results.begin(), results.end(), [](const Result &a, const Result &b) {
        if (a.fits() != b.fits()) {
            return a.fits();
        }
        return a.ns_per_op() < b.ns_per_op();
    });
    double rec_ns = 0;
    for (const Result &r : results) {
        if (r.backend == recorded && r.params.empty()) {
            rec_ns = r.ns_per_op();
        }
    }
    std::printf("\n%-4s %-10s %-14s %10s %12s %8s %8s %8s %10s %7s %9s\n", "rank", "backend", "params",
                "mismatch", "inspected/op", "deepest", "ns/op", "Mev/s", "bytes_hw", "queues", "saving");
    int rank = 0;
    for (const Result &r : results) {
        char saving[32] = "-";
        if (rec_ns > 0) {
            std::snprintf(saving, sizeof saving, "%+.0f%%", 100.0 * (rec_ns - r.ns_per_op()) / rec_ns);
        }
        std::printf("%-4d %-10s %-14s %10llu %12.2f %8llu %8.1f %8.1f %10llu %7llu %9s\n", ++rank,
                    r.backend.c_str(), r.params.empty() ? "default" : r.params.c_str(),
                    static_cast<unsigned long long>(r.mismatches),
                    r.ops ? static_cast<double>(r.inspected) / static_cast<double>(r.ops) : 0.0,
                    static_cast<unsigned long long>(r.deepest), r.ns_per_op(),
                    r.ns > 0 ? 1e3 * static_cast<double>(r.ops) / r.ns : 0.0,
                    static_cast<unsigned long long>(r.bytes_hw), static_cast<unsigned long long>(r.queues_hw),
                    saving);
    }
    std::printf("(saving: ns/op against the recorded backend, %s; ns/op is wall time of the engine alone)\n",
                recorded.c_str());
    for (const Result &r : results) {
        std::string assertions = r.assertion != nullptr ? r.assertion : "";
        for (size_t at = assertions.find(','); at != std::string::npos; at = assertions.find(',', at + 2)) {
            assertions.insert(at + 1, " ");
        }
        if (r.refused != 0 && r.params.empty()) {
            std::printf("%s: does not fit this trace: it refused %llu of the job's calls, which its assertions "
                        "(%s) rule out; the matches after them differ as a consequence\n",
                        r.backend.c_str(), static_cast<unsigned long long>(r.refused), assertions.c_str());
        } else if (r.excused() && r.params.empty()) {
            std::printf("%s: made %llu matches other than the job's, as overtaking allows (%s): only for a job "
                        "that makes those assertions\n",
                        r.backend.c_str(), static_cast<unsigned long long>(r.mismatches), assertions.c_str());
        }
    }
    uint64_t reordered = 0;
    for (const Result &r : results) {
        reordered = std::max(reordered, r.reordered);
    }
    if (reordered != 0) {
        std::printf("up to %llu matches differ from the job's on communicators where its engine let messages "
                    "overtake (mpi_assert_allow_overtaking): either order is right there\n",
                    static_cast<unsigned long long>(reordered));
    }
    const Result &best = results.front();
    if (!best.fits()) {
        std::printf("\nno recommendation: no backend made the recorded matches%s\n",
                    best.excused() ? " (the relaxed backends asked for do not fit this trace)" : " (a bug)");
        return;
    }
    std::string line = "--mca pml ubermatch --mca pml_ubermatch_backend " + best.backend;
    if (!best.params.empty()) {
        const size_t eq = best.params.find('=');
        line += " --mca pml_ubermatch_" + best.params.substr(0, eq) + " " + best.params.substr(eq + 1);
    }
    std::printf("\nrecommended: mpirun %s ...\n", line.c_str());
}

int run(int argc, char **argv) {
    std::string dir;
    std::vector<std::string> names;
    um_params_t params = default_params();
    bool print_only = false, sweep = true, partial = false;
    std::string otf2_dir;
    int reps_arg = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "--backends" || a == "--params") && i + 1 < argc) {
            const std::string v = argv[++i];
            if (a == "--backends") {
                names = split(v);
            } else {
                for (const std::string &kv : split(v)) {
                    set_param(params, kv);
                }
            }
        } else if (a == "--reps" && i + 1 < argc) {
            reps_arg = std::atoi(argv[++i]);
            if (reps_arg < 1) {
                throw std::invalid_argument(std::string("--reps: '") + argv[i] + "' is not a count of 1 or more");
            }
        } else if (a == "--print") {
            print_only = true;
        } else if (a == "--otf2" && i + 1 < argc) {
            otf2_dir = argv[++i];
#ifndef UM_HAVE_OTF2
            throw std::invalid_argument("--otf2: this ubermatch-replay was built without OTF2 (install the Debian "
                                        "package libotf2-trace-dev, then configure and build again)");
#endif
        } else if (a == "--no-sweep") {
            sweep = false;
        } else if (a == "--partial") {
            partial = true;
        } else if (a == "-h" || a == "--help") {
            std::printf("%s", kUsage);
            return 0;
        } else if (a[0] != '-' && dir.empty()) {
            dir = a;
        } else {
            throw std::invalid_argument("unknown or incomplete argument '" + a + "'\n" + kUsage);
        }
    }
    if (dir.empty()) {
        throw std::invalid_argument(kUsage);
    }
    if (names.empty()) {
        for (const Backend &b : backends()) {
            if (b.assertion == nullptr) { // a relaxed backend fits only a job that makes its assertion
                names.emplace_back(b.name);
            }
        }
    }
    for (const std::string &n : names) {
        make_engine(n, 1, params); // an unknown name or bad --params: the valid choices, before any work
    }
    const std::vector<trace::TraceFile> files = load(dir, partial);
    for (const auto &f : files) {
        if (f.cut) {
            std::fprintf(stderr,
                         "%s: cut (no end record: the run did not reach MPI_Finalize); the %zu events written "
                         "before the cut are read, those after its last write are lost%s\n",
                         f.path.c_str(), f.records.size(),
                         f.header.ns_per_tick == 1.0 ? "; its times are clock ticks, not ns, if its clock was the TSC (the rate is written at the end)"
                                                     : "");
        }
    }
    if (print_only) {
        print(files);
        return 0;
    }
#ifdef UM_HAVE_OTF2
    if (!otf2_dir.empty()) {
        const replay::Otf2Summary sum = replay::export_otf2(files, otf2_dir);
        std::printf("wrote %s: %zu ranks, %llu OTF2 events (read it with otf2-print, Vampir or Score-P's tools)\n",
                    sum.anchor.c_str(), files.size(), static_cast<unsigned long long>(sum.events));
        return 0;
    }
#endif
    uint64_t total = 0, dropped = 0;
    for (const auto &f : files) {
        total += f.records.size();
        dropped += f.dropped;
    }
    for (const auto &f : files) {
        if (f.cut) {
            report_cut(f);
        }
    }
    if (total == 0) {
        std::printf("trace %s: %zu ranks, no events to replay\n", dir.c_str(), files.size());
        return 0;
    }
    const std::string recorded = files.front().header.backend;
    std::set<uint32_t> jobs;
    for (const auto &f : files) {
        jobs.insert(f.header.job);
    }
    const std::string spawned = jobs.size() > 1 ? " in " + std::to_string(jobs.size()) + " jobs (spawned)" : "";
    std::printf("trace %s: %zu ranks%s, %llu events, recorded with backend %s\n", dir.c_str(), files.size(),
                spawned.c_str(), static_cast<unsigned long long>(total), recorded.c_str());
    // Replay short traces until about 10^6 events per configuration, at most 100 times.
    const int reps = reps_arg > 0 ? reps_arg : static_cast<int>(std::min<uint64_t>(100, 1 + 1000000 / (total + 1)));
    std::printf("replaying through %zu backends, %d time(s) each, the fastest pass kept\n", names.size(), reps);
    if (dropped != 0) {
        std::printf("WARNING: %llu events were dropped while recording; matches past them may differ\n",
                    static_cast<unsigned long long>(dropped));
    }
    std::vector<Result> results;
    for (const std::string &n : names) {
        results.push_back(replay_best(files, n, params, "", total, reps));
        for (const Sweep &s : kSweeps) {
            if (!sweep || n != s.backend) {
                continue;
            }
            for (int64_t v : s.values) {
                if (params.*s.field == v) {
                    continue;
                }
                um_params_t p = params;
                p.*s.field = v;
                const std::string kv = std::string(s.param) + "=" + std::to_string(v);
                if (kv == "index_at=4") {
                    p.list_at = 2; // list_at must stay below index_at
                }
                results.push_back(replay_best(files, n, p, kv, total, reps));
            }
        }
    }
    uint64_t bad = 0;
    for (const Result &r : results) {
        bad += r.excused() ? 0 : r.mismatches;
    }
    advise(results, recorded);
    if (bad != 0) {
        std::printf("\nBUG: %llu replayed matches differ from the recorded run (MISMATCH lines above)\n",
                    static_cast<unsigned long long>(bad));
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ubermatch-replay: %s\n", e.what());
        return 2;
    }
}

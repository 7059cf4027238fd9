// The OTF2 export of a matching trace (otf2_export.h). The archive's references:
// location, location group = the file's index (its rank's order); regions: the
// engine calls, then one per collective; attributes and strings numbered as
// defined below. Times are CLOCK_MONOTONIC nanoseconds (each file's t0 plus its
// records' offsets), so the ranks of one node share one time line.
#include "replay/otf2_export.h"

#include <dirent.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <stdexcept>

namespace ubermatch {
namespace replay {
namespace {

using trace::TraceOp;

// The engine calls' regions, by TraceOp (index 0 and the collectives' ops unused).
constexpr TraceOp kCalls[] = {TraceOp::comm_create, TraceOp::post_recv, TraceOp::arrive,
                              TraceOp::probe,       TraceOp::mprobe,    TraceOp::cancel};
constexpr uint32_t kCallRegions = sizeof kCalls / sizeof kCalls[0];
uint32_t call_region(uint8_t op) {
    for (uint32_t i = 0; i < kCallRegions; ++i) {
        if (static_cast<uint8_t>(kCalls[i]) == op) {
            return i;
        }
    }
    return UINT32_MAX;
}
// Collectives from 1 (0 is point-to-point): OTF2 wants definitions numbered without gaps.
uint32_t coll_region(uint16_t coll) { return kCallRegions + coll - 1; }

enum Attribute : OTF2_AttributeRef { kComm, kSource, kTag, kResult, kId, kMatched, kMsgSize, kAttributes };
constexpr OTF2_MetricRef kQueues = 0; // a class of two members: posted, unexpected

void check(OTF2_ErrorCode rc, const std::string &dir, const char *what) {
    if (rc != OTF2_SUCCESS) {
        throw std::runtime_error(dir + ": OTF2 " + what + ": " + OTF2_Error_GetDescription(rc));
    }
}

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
const OTF2_FlushCallbacks kFlush = {pre_flush, nullptr}; // no flush events in the trace

// The queues' lengths that a record changes: a search that matched took an
// element of the other queue, one that did not queued itself; mprobe and
// cancel remove what they name.
void follow(const trace::TraceRecord &r, int64_t &posted, int64_t &unexpected) {
    if (r.result > 1) {
        return; // refused: nothing queued or taken
    }
    const int64_t hit = r.result;
    switch (static_cast<TraceOp>(r.op)) {
    case TraceOp::post_recv:
        posted += 1 - hit;
        unexpected -= hit;
        break;
    case TraceOp::arrive:
        unexpected += 1 - hit;
        posted -= hit;
        break;
    case TraceOp::mprobe: unexpected -= hit; break;
    case TraceOp::cancel: posted -= hit; break;
    default: break;
    }
}

// One rank's events; returns how many it wrote.
uint64_t write_rank(OTF2_Archive *archive, OTF2_LocationRef loc, const trace::TraceFile &f, const std::string &dir) {
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(archive, loc);
    if (w == nullptr) {
        throw std::runtime_error(dir + ": OTF2 could not open the event writer of " + f.path);
    }
    OTF2_AttributeList *attrs = OTF2_AttributeList_New();
    uint64_t n = 0, t = f.header.t0_ns;
    int64_t posted = 0, unexpected = 0;
    std::vector<uint16_t> colls; // the collectives entered, innermost last
    const OTF2_Type types[2] = {OTF2_TYPE_UINT64, OTF2_TYPE_UINT64};
    auto metric = [&] {
        OTF2_MetricValue v[2];
        v[0].unsigned_int = static_cast<uint64_t>(std::max<int64_t>(posted, 0));
        v[1].unsigned_int = static_cast<uint64_t>(std::max<int64_t>(unexpected, 0));
        check(OTF2_EvtWriter_Metric(w, nullptr, t, kQueues, 2, types, v), dir, "metric event");
        ++n;
    };
    auto leave = [&](uint16_t coll) {
        check(OTF2_EvtWriter_Leave(w, nullptr, t, coll_region(coll)), dir, "leave event");
        ++n;
    };
    metric();
    for (const trace::TraceRecord &r : f.records) {
        t = std::max(t, f.header.t0_ns + r.t_ns); // OTF2 wants each location's times in order
        const bool coll_op = r.op == static_cast<uint8_t>(TraceOp::coll_begin) ||
                             r.op == static_cast<uint8_t>(TraceOp::coll_end);
        if (coll_op && (r.coll == UM_COLL_NONE || r.coll >= UM_COLL_COUNT)) {
            continue; // no region of ours names it
        }
        if (r.op == static_cast<uint8_t>(TraceOp::coll_begin)) {
            check(OTF2_EvtWriter_Enter(w, nullptr, t, coll_region(r.coll)), dir, "enter event");
            colls.push_back(r.coll);
            ++n;
            continue;
        }
        if (r.op == static_cast<uint8_t>(TraceOp::coll_end)) {
            // Regions must nest: an end that is not the innermost's closes
            // the ones inside it too (overlapping non-blocking collectives).
            const auto it = std::find(colls.rbegin(), colls.rend(), r.coll);
            for (auto k = colls.rbegin(); it != colls.rend() && k != std::next(it); ++k) {
                leave(*k);
            }
            if (it != colls.rend()) {
                colls.erase(std::prev(it.base()), colls.end());
            }
            continue;
        }
        const uint32_t region = call_region(r.op);
        if (region == UINT32_MAX) {
            continue;
        }
        OTF2_AttributeList_AddUint32(attrs, kComm, r.cid);
        OTF2_AttributeList_AddInt32(attrs, kSource, r.source);
        OTF2_AttributeList_AddInt32(attrs, kTag, r.tag);
        OTF2_AttributeList_AddUint8(attrs, kResult, r.result);
        OTF2_AttributeList_AddUint64(attrs, kId, r.id);
        OTF2_AttributeList_AddUint64(attrs, kMatched, r.matched);
        OTF2_AttributeList_AddUint32(attrs, kMsgSize, r.msg_size);
        check(OTF2_EvtWriter_Enter(w, attrs, t, region), dir, "enter event");
        check(OTF2_EvtWriter_Leave(w, nullptr, t, region), dir, "leave event");
        n += 2;
        const int64_t p = posted, u = unexpected;
        follow(r, posted, unexpected);
        if (p != posted || u != unexpected) {
            metric();
        }
    }
    while (!colls.empty()) { // a cut trace's collectives end where its records do
        leave(colls.back());
        colls.pop_back();
    }
    OTF2_AttributeList_Delete(attrs);
    check(OTF2_Archive_CloseEvtWriter(archive, w), dir, "closing an event writer");
    return n;
}

void write_definitions(OTF2_Archive *archive, const std::vector<trace::TraceFile> &files,
                       const std::vector<uint64_t> &events, uint64_t t_min, uint64_t t_max, const std::string &dir) {
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(archive);
    if (g == nullptr) {
        throw std::runtime_error(dir + ": OTF2 could not open the global definitions");
    }
    OTF2_StringRef next = 0;
    auto str = [&](const std::string &s) {
        check(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), dir, "string definition");
        return next++;
    };
    check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, t_min, t_max - t_min, OTF2_UNDEFINED_TIMESTAMP),
          dir, "clock definition");
    const OTF2_StringRef empty = str(""), user = str("matching engine call");
    for (uint32_t i = 0; i < kCallRegions; ++i) {
        const OTF2_StringRef name = str(trace::op_name(static_cast<uint8_t>(kCalls[i])));
        check(OTF2_GlobalDefWriter_WriteRegion(g, i, name, name, user, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                               OTF2_REGION_FLAG_NONE, empty, 0, 0),
              dir, "region definition");
    }
    const OTF2_StringRef coll = str("collective, as coll/ubermatch reported it");
    for (uint16_t c = 1; c < UM_COLL_COUNT; ++c) {
        const OTF2_StringRef name = str(std::string("collective ") + um_coll_name(static_cast<um_coll_t>(c)));
        check(OTF2_GlobalDefWriter_WriteRegion(g, coll_region(c), name, name, coll, OTF2_REGION_ROLE_COLL_OTHER,
                                               OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0),
              dir, "region definition");
    }
    const struct {
        const char *name, *what;
        OTF2_Type type;
    } attributes[kAttributes] = {
        {"communicator", "the engine's communicator (Open MPI's cid)", OTF2_TYPE_UINT32},
        {"source", "rank in the communicator; -1: MPI_ANY_SOURCE (comm_create: this rank)", OTF2_TYPE_INT32},
        {"tag", "-1: MPI_ANY_TAG (comm_create: the communicator's size)", OTF2_TYPE_INT32},
        {"result", "searches: 1 matched, 0 queued, 2 refused (an assertion); cancel: 1 removed", OTF2_TYPE_UINT8},
        {"id", "the receive's or message's id, unique within the rank", OTF2_TYPE_UINT64},
        {"matched", "the id of the element it matched; 0: none", OTF2_TYPE_UINT64},
        {"msg_size", "the message's size hint, bytes", OTF2_TYPE_UINT32},
    };
    for (OTF2_AttributeRef a = 0; a < kAttributes; ++a) {
        check(OTF2_GlobalDefWriter_WriteAttribute(g, a, str(attributes[a].name), str(attributes[a].what),
                                                  attributes[a].type),
              dir, "attribute definition");
    }
    const OTF2_MetricMemberRef members[2] = {0, 1};
    const char *const queue[2] = {"posted receives queued", "unexpected messages queued"};
    for (OTF2_MetricMemberRef m = 0; m < 2; ++m) {
        check(OTF2_GlobalDefWriter_WriteMetricMember(g, m, str(queue[m]), str("over every communicator of the rank"),
                                                     OTF2_METRIC_TYPE_OTHER, OTF2_METRIC_ABSOLUTE_POINT,
                                                     OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, str("elements")),
              dir, "metric definition");
    }
    check(OTF2_GlobalDefWriter_WriteMetricClass(g, kQueues, 2, members, OTF2_METRIC_SYNCHRONOUS,
                                                OTF2_RECORDER_KIND_ABSTRACT),
          dir, "metric class definition");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("job " + std::to_string(files[0].header.job)), str("job"),
                                                   OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          dir, "system tree definition");
    for (size_t i = 0; i < files.size(); ++i) {
        const auto loc = static_cast<OTF2_LocationRef>(i);
        const std::string name = "rank " + std::to_string(files[i].header.rank);
        check(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<OTF2_LocationGroupRef>(i), str(name),
                                                      OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                      OTF2_UNDEFINED_LOCATION_GROUP),
              dir, "location group definition");
        check(OTF2_GlobalDefWriter_WriteLocation(g, loc, str(name + " (" + files[i].header.backend + ")"),
                                                 OTF2_LOCATION_TYPE_CPU_THREAD, events[i],
                                                 static_cast<OTF2_LocationGroupRef>(i)),
              dir, "location definition");
    }
    check(OTF2_Archive_CloseGlobalDefWriter(archive, g), dir, "closing the global definitions");
}

// dir must not hold anything: an archive written over another mixes their files.
void require_empty(const std::string &dir) {
    DIR *d = ::opendir(dir.c_str());
    if (d == nullptr) {
        return; // OTF2 makes it (a parent that is not there or not a directory: its error)
    }
    bool empty = true;
    while (const dirent *e = ::readdir(d)) {
        empty = empty && (std::string(e->d_name) == "." || std::string(e->d_name) == "..");
    }
    ::closedir(d);
    if (!empty) {
        throw std::runtime_error("--otf2 " + dir + ": the directory is not empty (give a new or empty one)");
    }
}

} // namespace

Otf2Summary export_otf2(const std::vector<trace::TraceFile> &files, const std::string &dir) {
    require_empty(dir);
    OTF2_Archive *archive =
        OTF2_Archive_Open(dir.c_str(), "matching", OTF2_FILEMODE_WRITE, OTF2_CHUNK_SIZE_EVENTS_DEFAULT,
                          OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (archive == nullptr) {
        throw std::runtime_error("--otf2 " + dir + ": OTF2 could not create the archive there");
    }
    Otf2Summary sum{dir + "/matching.otf2", 0};
    try {
        check(OTF2_Archive_SetFlushCallbacks(archive, &kFlush, nullptr), dir, "flush callbacks");
        check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), dir, "collective callbacks");
        check(OTF2_Archive_SetCreator(archive, "ubermatch-replay --otf2"), dir, "creator");
        check(OTF2_Archive_OpenEvtFiles(archive), dir, "opening the event files");
        std::vector<uint64_t> events(files.size());
        uint64_t t_min = UINT64_MAX, t_max = 0;
        for (size_t i = 0; i < files.size(); ++i) {
            events[i] = write_rank(archive, static_cast<OTF2_LocationRef>(i), files[i], dir);
            sum.events += events[i];
            t_min = std::min(t_min, files[i].header.t0_ns);
            t_max = std::max(t_max, files[i].header.t0_ns + (files[i].records.empty() ? 0 : files[i].records.back().t_ns));
        }
        check(OTF2_Archive_CloseEvtFiles(archive), dir, "closing the event files");
        // Every location has local definitions, empty here: readers open them.
        check(OTF2_Archive_OpenDefFiles(archive), dir, "opening the definition files");
        for (size_t i = 0; i < files.size(); ++i) {
            OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(archive, static_cast<OTF2_LocationRef>(i));
            check(d == nullptr ? OTF2_ERROR_MEM_FAULT : OTF2_Archive_CloseDefWriter(archive, d), dir,
                  "local definitions");
        }
        check(OTF2_Archive_CloseDefFiles(archive), dir, "closing the definition files");
        write_definitions(archive, files, events, t_min, std::max(t_max, t_min), dir);
    } catch (...) {
        OTF2_Archive_Close(archive);
        throw;
    }
    check(OTF2_Archive_Close(archive), dir, "closing the archive");
    return sum;
}

} // namespace replay
} // namespace ubermatch

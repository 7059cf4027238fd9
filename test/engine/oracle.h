// The reference model: MPI matching written as plainly as possible, two
// vectors scanned front to back. It shares no code with the backends, so a
// bug in their common pieces (the match predicate, the queues) shows up as a
// difference.
#ifndef UBERMATCH_TEST_ORACLE_H
#define UBERMATCH_TEST_ORACLE_H

#include <cstdint>
#include <vector>

#include "matching/ubermatch_engine.h"

namespace ubermatch::test {

struct OracleEntry {
    int32_t source;
    int32_t tag;
    void *handle;
};

class Oracle {
public:
    explicit Oracle(int32_t comm_size) : comm_size_(comm_size) {}

    // Same status codes and results as the engine's calls.
    int post_recv(int32_t source, int32_t tag, void *request, void **matched);
    int arrive(int32_t source, int32_t tag, void *message, void **matched);
    int probe(int32_t source, int32_t tag, bool remove, void **matched);
    int cancel(int32_t source, int32_t tag, void *request, bool *removed);

    // For engines that may take any matching element (overtaking): is an
    // element queued that MPI's rule pairs with (source, tag) (a message with
    // a receive; wildcards in the receive); is the element `handle` queued and
    // such an element (then removed when `remove`).
    bool holds(bool posted, int32_t source, int32_t tag) const;
    bool find(bool posted, int32_t source, int32_t tag, const void *handle, bool remove);

    const std::vector<OracleEntry> &posted() const { return posted_; }
    const std::vector<OracleEntry> &unexpected() const { return unexpected_; }

    // MPI's rule: does receive `recv` (wildcards allowed) take message `msg`?
    static bool matches(const OracleEntry &recv, const OracleEntry &msg);

private:
    bool source_ok(int32_t source, bool wildcard_ok) const;

    int32_t comm_size_;
    std::vector<OracleEntry> posted_;
    std::vector<OracleEntry> unexpected_;
};

} // namespace ubermatch::test

#endif

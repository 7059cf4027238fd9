// The backends, by name. Adding one is a file pair plus one row in registry.cc.
#ifndef UBERMATCH_MATCHING_REGISTRY_H
#define UBERMATCH_MATCHING_REGISTRY_H

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "matching/engine.h"

namespace ubermatch {

struct Backend {
    const char *name;
    const char *description;
    std::unique_ptr<Engine> (*make)(int32_t comm_size, const um_params_t &params);
    // The assertion a relaxed backend needs ("mpi_assert_no_any_source", ...);
    // nullptr: full MPI matching.
    const char *assertion = nullptr;
};

const std::vector<Backend> &backends();

// What a relaxed backend relies on, as bits (the PML's UM_PROTO_ASSERT_* have
// the same values); 0: full matching, or a name no backend has.
enum Relaxation : uint32_t {
    kNoAnySource = 1,  // mpi_assert_no_any_source
    kNoAnyTag = 2,     // mpi_assert_no_any_tag
    kNoUnexpected = 4, // ubermatch_no_unexpected
    kOvertaking = 8,   // mpi_assert_allow_overtaking
};
uint32_t relaxations_of(const std::string &backend);

// "list, perpeer, bins; for communicators with matching assertions: nosource, exact"
const std::string &backend_names();

// Throws std::invalid_argument, with a message naming the valid choices, for an
// unknown backend, a communicator size below 1 or a parameter out of range.
std::unique_ptr<Engine> make_engine(const std::string &backend, int32_t comm_size,
                                    const um_params_t &params);

// make_engine() checks only the parameters its backend uses; this checks
// every one, as the backends that use it do (throws like make_engine): for a
// caller that wants a typo refused whatever the backend.
void check_params(const um_params_t &params);

um_params_t default_params();

} // namespace ubermatch

#endif

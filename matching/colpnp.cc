#include "matching/colpnp.h"

#include <stdexcept>
#include <string>

namespace ubermatch {

std::unique_ptr<Engine> make_split_engine(const char *name, int32_t n, int64_t theta, int64_t k_c,
                                          int64_t k_p) {
    const auto pnp = [&] { return PnpPart(n, theta, k_p); };
    const auto col = [&] { return ColPart(n, k_c); };
    const auto list = [] { return ListPart(); };
    const std::string s = name;
    if (s == "colpnp") {
        return std::make_unique<ColPnpEngine>("colpnp", n, pnp, col);
    }
    if (s == "col+list" || s == "col") {
        return std::make_unique<ColListEngine>(s == "col" ? "col" : "col+list", n, list, col);
    }
    if (s == "list+pnp") {
        return std::make_unique<ListPnpEngine>("list+pnp", n, pnp, list);
    }
    if (s == "pnp") {
        return std::make_unique<PnpEngine>("pnp", n, pnp, [] { return NoPart{}; });
    }
    throw std::invalid_argument("no such composed backend: " + s);
}

} // namespace ubermatch

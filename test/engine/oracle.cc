#include "test/engine/oracle.h"

namespace ubermatch::test {

bool Oracle::matches(const OracleEntry &recv, const OracleEntry &msg) {
    if (recv.source != -1 && recv.source != msg.source) {
        return false;
    }
    if (recv.tag == -1) {
        return msg.tag >= 0; // ANY_TAG never takes collective (negative) tags
    }
    return recv.tag == msg.tag;
}

bool Oracle::source_ok(int32_t source, bool wildcard_ok) const {
    if (source == -1) {
        return wildcard_ok;
    }
    return source >= 0 && source < comm_size_;
}

int Oracle::post_recv(int32_t source, int32_t tag, void *request, void **matched) {
    *matched = nullptr;
    if (!source_ok(source, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    const OracleEntry recv{source, tag, request};
    for (size_t i = 0; i < unexpected_.size(); ++i) {
        if (matches(recv, unexpected_[i])) {
            *matched = unexpected_[i].handle;
            unexpected_.erase(unexpected_.begin() + static_cast<std::ptrdiff_t>(i));
            return UM_OK;
        }
    }
    posted_.push_back(recv);
    return UM_OK;
}

int Oracle::arrive(int32_t source, int32_t tag, void *message, void **matched) {
    *matched = nullptr;
    if (!source_ok(source, false)) {
        return UM_ERR_SOURCE;
    }
    if (tag == -1) {
        return UM_ERR_TAG;
    }
    if (message == nullptr) {
        return UM_ERR_ARG;
    }
    const OracleEntry msg{source, tag, message};
    for (size_t i = 0; i < posted_.size(); ++i) {
        if (matches(posted_[i], msg)) {
            *matched = posted_[i].handle;
            posted_.erase(posted_.begin() + static_cast<std::ptrdiff_t>(i));
            return UM_OK;
        }
    }
    unexpected_.push_back(msg);
    return UM_OK;
}

int Oracle::probe(int32_t source, int32_t tag, bool remove, void **matched) {
    *matched = nullptr;
    if (!source_ok(source, true)) {
        return UM_ERR_SOURCE;
    }
    const OracleEntry recv{source, tag, nullptr};
    for (size_t i = 0; i < unexpected_.size(); ++i) {
        if (matches(recv, unexpected_[i])) {
            *matched = unexpected_[i].handle;
            if (remove) {
                unexpected_.erase(unexpected_.begin() + static_cast<std::ptrdiff_t>(i));
            }
            return UM_OK;
        }
    }
    return UM_OK;
}

int Oracle::cancel(int32_t source, int32_t, void *request, bool *removed) {
    *removed = false;
    if (!source_ok(source, true)) {
        return UM_ERR_SOURCE;
    }
    if (request == nullptr) {
        return UM_ERR_ARG;
    }
    for (size_t i = 0; i < posted_.size(); ++i) {
        if (posted_[i].handle == request) {
            posted_.erase(posted_.begin() + static_cast<std::ptrdiff_t>(i));
            *removed = true;
            return UM_OK;
        }
    }
    return UM_OK;
}

// posted: `e` is a receive and (source, tag) a message; else the reverse.
static bool pairs(bool posted, const OracleEntry &e, int32_t source, int32_t tag) {
    const OracleEntry other{source, tag, nullptr};
    return posted ? Oracle::matches(e, other) : Oracle::matches(other, e);
}

bool Oracle::holds(bool posted, int32_t source, int32_t tag) const {
    for (const OracleEntry &e : posted ? posted_ : unexpected_) {
        if (pairs(posted, e, source, tag)) {
            return true;
        }
    }
    return false;
}

bool Oracle::find(bool posted, int32_t source, int32_t tag, const void *handle, bool remove) {
    std::vector<OracleEntry> &q = posted ? posted_ : unexpected_;
    for (size_t i = 0; i < q.size(); ++i) {
        if (q[i].handle == handle) {
            if (!pairs(posted, q[i], source, tag)) {
                return false;
            }
            if (remove) {
                q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
            }
            return true;
        }
    }
    return false;
}

} // namespace ubermatch::test

// The copies of unexpected eager payloads (a ring's record must be given back
// to its sender before a receive takes it), kept for reuse in power-of-two
// classes: malloc and free of a few KiB were 14% of a receiver taking 4 KiB
// messages by MPI_Iprobe and MPI_Recv. Not thread-safe: the protocol holds its
// pool lock around it.
#ifndef UBERMATCH_PROTOCOL_PAYLOAD_POOL_H
#define UBERMATCH_PROTOCOL_PAYLOAD_POOL_H

#include <cstddef>
#include <cstdlib>
#include <vector>

namespace ubermatch::protocol {

class PayloadPool {
public:
    PayloadPool() = default;
    PayloadPool(const PayloadPool &) = delete;
    PayloadPool &operator=(const PayloadPool &) = delete;
    ~PayloadPool() {
        for (auto &list : free_) {
            for (void *p : list) {
                std::free(p);
            }
        }
    }
    // At least length bytes, nullptr when there is no memory.
    void *get(size_t length) noexcept {
        const int c = class_of(length);
        if (c < 0) {
            return std::malloc(length);
        }
        if (!free_[static_cast<size_t>(c)].empty()) {
            void *p = free_[static_cast<size_t>(c)].back();
            free_[static_cast<size_t>(c)].pop_back();
            return p;
        }
        return std::malloc(size_t{1} << (c + kMinShift));
    }
    // p came from get(length).
    void put(void *p, size_t length) noexcept {
        const int c = class_of(length);
        auto &list = free_[c < 0 ? 0 : static_cast<size_t>(c)];
        if (c < 0 || list.size() == list.capacity()) { // kKeep kept (0 without reserve())
            std::free(p);
            return;
        }
        list.push_back(p); // within the capacity: never allocates
    }
    // Buffers kept for length's class (tests).
    size_t kept(size_t length) const noexcept {
        const int c = class_of(length);
        return c < 0 ? 0 : free_[static_cast<size_t>(c)].size();
    }
    // The lists' capacity up front, so that put() never allocates; false
    // without the memory (the pool then only allocates and frees).
    bool reserve() noexcept {
        try {
            for (auto &list : free_) {
                list.reserve(kKeep);
            }
        } catch (...) {
            return false;
        }
        return true;
    }

private:
    // Classes 128 B .. 64 KiB (the rings' eager limit is below); 64 of each kept.
    static constexpr int kMinShift = 7;
    static constexpr int kClasses = 10;
    static constexpr size_t kKeep = 64;
    static int class_of(size_t length) {
        int c = 0;
        while (c < kClasses && (size_t{1} << (c + kMinShift)) < length) {
            ++c;
        }
        return c < kClasses ? c : -1;
    }
    std::vector<void *> free_[kClasses];
};

} // namespace ubermatch::protocol

#endif

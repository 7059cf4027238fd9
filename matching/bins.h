// `bins`: hash bins over (source, tag), after Flajslik et al. Exact receives
// and all messages go to the bin their (source, tag) hashes to; wildcard
// receives wait in one queue, and posting sequence numbers decide between a
// bin's receive and a wildcard one. Messages are also kept in one arrival-order
// queue, which wildcard receives scan instead of visiting every bin.
#ifndef UBERMATCH_MATCHING_BINS_H
#define UBERMATCH_MATCHING_BINS_H

#include <vector>

#include "matching/engine.h"
#include "matching/queue.h"

namespace ubermatch {

class BinsEngine final : public Engine {
public:
    static constexpr int64_t kMinBins = 1;
    static constexpr int64_t kMaxBins = int64_t{1} << 20;

    BinsEngine(int32_t comm_size, uint32_t bins);
    const char *name() const override { return "bins"; }

protected:
    Found do_post_recv(int32_t source, int32_t tag, const um_hint_t &hint, void *request) override;
    Found do_arrive(int32_t source, int32_t tag, const um_hint_t &hint, void *message) override;
    Found do_probe(int32_t source, int32_t tag, const um_hint_t &hint, bool remove) override;
    bool do_cancel(int32_t source, int32_t tag, void *request) override;
    void visit(const Visitor &f) const override;
    uint64_t queues_allocated() const override;
    uint64_t bytes_used() const override;

private:
    size_t bin_of(int32_t source, int32_t tag) const {
        // Fibonacci-style mix, then a multiply-shift range reduction: any bin count works.
        const uint64_t h = (pack_key(source, tag) * 0x9E3779B97F4A7C15ull) >> 32;
        return static_cast<size_t>((h * nbins_) >> 32);
    }
    static bool is_wild(int32_t source, int32_t tag) {
        return source == UM_ANY_SOURCE || tag == UM_ANY_TAG;
    }
    Entry *find_message(int32_t source, int32_t tag, uint32_t &inspected);
    void take_message(Entry *e);

    const uint64_t nbins_;
    std::vector<PeerQueue> posted_;     // exact receives, by bin
    PeerQueue posted_wild_;             // receives with a wildcard
    std::vector<PeerQueue> unexpected_; // messages, by bin
    OrderQueue arrival_;                // messages, in arrival order
    EntryPool pool_;
};

} // namespace ubermatch

#endif

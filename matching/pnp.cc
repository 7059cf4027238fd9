#include "matching/pnp.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ubermatch {

uint64_t queue_cap(int64_t k, int32_t comm_size) {
    // floor(sqrt(k^2 n)) in integers: exact where k * sqrt(n) is a whole number.
    const uint64_t x = static_cast<uint64_t>(k) * static_cast<uint64_t>(k) * static_cast<uint64_t>(comm_size);
    auto r = static_cast<uint64_t>(std::sqrt(static_cast<double>(x)));
    while (r * r > x) {
        --r;
    }
    while ((r + 1) * (r + 1) <= x) {
        ++r;
    }
    return r;
}

Candidate PnpSide::find_any_source(int32_t tag, uint32_t &inspected) {
    Candidate h;
    h.keep_earlier(first_message_before(initial_, UM_ANY_SOURCE, tag, h.bound(), inspected), &initial_);
    for (PeerQueue &q : queues_) {
        h.keep_earlier(first_message_before(q, UM_ANY_SOURCE, tag, h.bound(), inspected), &q);
    }
    return h;
}

// The non-partner queue being appended to has reached theta: its sources with
// more elements than the average (over the sources present) become partners.
void PnpSide::extract_partners() {
    const OverheadScope overhead(timers_);
    since_check_ = 0;
    if (budget_->left() < 2) {
        exhausted_ = true; // a level needs a partner queue and a non-partner queue
        return;
    }
    const PeerQueue &q = np_.empty() ? initial_ : queues_[np_.back()];
    std::vector<int32_t> sources;
    sources.reserve(q.size());
    q.for_each([&sources](const Entry &e) { sources.push_back(e.source); });
    std::sort(sources.begin(), sources.end());
    std::vector<std::pair<size_t, int32_t>> above; // (elements, source)
    size_t distinct = 0;
    for (size_t i = 0; i < sources.size();) {
        size_t j = i;
        while (j < sources.size() && sources[j] == sources[i]) {
            ++j;
        }
        above.emplace_back(j - i, sources[i]);
        ++distinct;
        i = j;
    }
    // count > size / distinct, in integers
    above.erase(std::remove_if(above.begin(), above.end(),
                               [&](const std::pair<size_t, int32_t> &c) {
                                   return c.first * distinct <= sources.size();
                               }),
                above.end());
    if (above.empty()) {
        return; // an even spread: splitting it would not shorten anyone's search
    }
    // The heaviest first when the budget does not cover them all.
    std::sort(above.begin(), above.end(), [](const auto &a, const auto &b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const size_t take = std::min<size_t>(above.size(), budget_->left() - 1);
    const auto upto = static_cast<uint32_t>(np_.size());
    for (size_t i = 0; i < take; ++i) {
        partners_.get(key(above[i].second), Partner{static_cast<uint32_t>(queues_.size()), upto});
        queues_.emplace_back();
    }
    np_.push_back(static_cast<uint32_t>(queues_.size()));
    queues_.emplace_back();
    budget_->used += take + 1;
}

Candidate PnpSide::find_handle(int32_t source, const void *handle) {
    const Partner *p = partners_.empty() ? nullptr : partners_.find(key(source));
    const size_t upto = p != nullptr ? p->upto : np_.size();
    if (Entry *e = initial_.find_handle(handle)) {
        return {e, &initial_};
    }
    for (size_t l = 0; l < upto; ++l) {
        PeerQueue &q = queues_[np_[l]];
        if (Entry *e = q.find_handle(handle)) {
            return {e, &q};
        }
    }
    if (p != nullptr) {
        PeerQueue &q = queues_[p->queue];
        return {q.find_handle(handle), &q};
    }
    return {};
}

void PnpSide::visit(bool posted, const std::function<void(bool, const QueuedElement &)> &f) const {
    visit_queue(initial_, posted, f);
    for (const PeerQueue &q : queues_) {
        visit_queue(q, posted, f);
    }
}

uint64_t PnpSide::heap_bytes() const {
    return queues_.capacity() * sizeof(PeerQueue) + np_.capacity() * sizeof(uint32_t) +
           partners_.bytes();
}

bool PnpPart::cancel(int32_t source, int32_t, void *request, ElementPool &pool) {
    Candidate h;
    if (source == UM_ANY_SOURCE) {
        h = {posted_any_.find_handle(request), &posted_any_};
    } else {
        h = posted_.find_handle(source, request);
    }
    if (h.e == nullptr) {
        return false;
    }
    h.q->remove(h.e);
    pool.put(h.e);
    return true;
}

void PnpPart::visit(const std::function<void(bool, const QueuedElement &)> &f) const {
    posted_.visit(true, f);
    visit_queue(posted_any_, true, f);
    unexpected_.visit(false, f);
}

} // namespace ubermatch

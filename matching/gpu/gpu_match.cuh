// GPU batch matching (issue 15; Klenk et al., IPDPS 2017, Sections V-VI).
// Input: receives in posting order (UM_ANY_SOURCE / UM_ANY_TAG allowed) and a
// batch of messages in arrival order, split into independent queues. Output:
// for each message the index of the receive it takes, or -1 (it stays
// unexpected); receives not taken stay posted. The compliant kernel gives the
// same answer as matching the messages one by one, in order.
#ifndef UBERMATCH_GPU_MATCH_CUH
#define UBERMATCH_GPU_MATCH_CUH

#include <cstdint>

namespace ubermatch::gpu {

// One independent queue: a communicator, or one peer's partition when the
// receives carry no source wildcard. Receive offsets are multiples of 32, so
// a queue's taken-bitmap starts at word r_off / 32.
struct Queue {
    int32_t r_off, r_len, m_off, m_len;
};

__device__ __forceinline__ bool accepts(int32_t rs, int32_t rt, int32_t ms, int32_t mt) {
    return (rs == -1 || rs == ms) && (rt == -1 ? mt >= 0 : rt == mt);
}

// Compliant scan: one warp per queue, messages in arrival order. For each
// message the warp tests 32 receives per step (coalesced loads, one ballot),
// masks those already taken and stops at the first hit, so the cost is the
// distance to the match, not the queue length (the paper builds the whole
// receives x messages matrix). `front` skips the fully taken prefix.
__global__ void match_compliant(const Queue *queues, int nqueues, const int32_t *rsrc,
                                const int32_t *rtag, const int32_t *msrc, const int32_t *mtag,
                                uint32_t *taken, int32_t *out) {
    const int lane = threadIdx.x & 31;
    const int q = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (q >= nqueues) {
        return;
    }
    const Queue Q = queues[q];
    const int32_t *rs = rsrc + Q.r_off, *rt = rtag + Q.r_off;
    uint32_t *tk = taken + (Q.r_off >> 5);
    const int words = (Q.r_len + 31) >> 5;
    int front = 0;
    for (int m = 0; m < Q.m_len; ++m) {
        const int32_t s = msrc[Q.m_off + m], t = mtag[Q.m_off + m];
        int32_t hit = -1;
        for (int w = front; w < words; ++w) {
            const int idx = (w << 5) + lane;
            const bool p = idx < Q.r_len && accepts(rs[idx], rt[idx], s, t);
            const uint32_t b = __ballot_sync(0xffffffffu, p) & ~tk[w];
            if (b) {
                hit = (w << 5) + __ffs(b) - 1;
                if (lane == 0) {
                    tk[w] |= 1u << (hit & 31);
                }
                __syncwarp();
                break;
            }
        }
        if (lane == 0) {
            out[Q.m_off + m] = hit < 0 ? -1 : Q.r_off + hit;
        }
        while (front < words && tk[front] == 0xffffffffu) {
            ++front;
        }
    }
}

// Unordered two-level hash table: level 1 maps the key (source, tag) to a slot
// by open addressing, level 2 chains that key's receives. Wildcards and
// ordering are given up: any receive with the message's key may be taken.
constexpr unsigned long long kEmpty = ~0ull;

__device__ __forceinline__ uint32_t slot_of(unsigned long long key, uint32_t mask) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return static_cast<uint32_t>(key) & mask;
}

__device__ __forceinline__ unsigned long long key_of(int32_t s, int32_t t) {
    return (static_cast<unsigned long long>(static_cast<uint32_t>(s)) << 32) | static_cast<uint32_t>(t);
}

__global__ void hash_insert(int n, const int32_t *rsrc, const int32_t *rtag, unsigned long long *keys,
                            int32_t *head, int32_t *next, uint32_t mask) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const unsigned long long k = key_of(rsrc[i], rtag[i]);
    for (uint32_t h = slot_of(k, mask);; h = (h + 1) & mask) {
        const unsigned long long prev = atomicCAS(&keys[h], kEmpty, k);
        if (prev == kEmpty || prev == k) {
            next[i] = atomicExch(&head[h], i);
            return;
        }
    }
}

// Runs after hash_insert has finished: chains only shrink here, so a CAS pop
// cannot see a recycled head (no ABA).
__global__ void hash_match(int n, const int32_t *msrc, const int32_t *mtag, const unsigned long long *keys,
                           int32_t *head, const int32_t *next, uint32_t mask, int32_t *out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const unsigned long long k = key_of(msrc[i], mtag[i]);
    int32_t got = -1;
    for (uint32_t h = slot_of(k, mask);; h = (h + 1) & mask) {
        const unsigned long long cur = keys[h];
        if (cur == kEmpty) {
            break;
        }
        if (cur == k) {
            int32_t top = head[h];
            while (top >= 0) {
                const int32_t seen = atomicCAS(&head[h], top, next[top]);
                if (seen == top) {
                    got = top;
                    break;
                }
                top = seen;
            }
            break;
        }
    }
    out[i] = got;
}

} // namespace ubermatch::gpu

#endif

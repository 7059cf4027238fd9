// The wire format of pml/ubermatch: what travels in front of every message.
// One header for both ends, nothing else on the wire but UCX's own headers
// and the payload (or UCX's rendezvous descriptor).
#ifndef UBERMATCH_PROTOCOL_WIRE_H
#define UBERMATCH_PROTOCOL_WIRE_H

#include <cstddef>
#include <cstdint>

namespace ubermatch::protocol {

// Active-message ids of our UCX worker.
enum : unsigned { kAmMessage = 1, kAmAck = 2, kAmShmOffer = 3, kAmShmReply = 4 };

// WireHeader::flags. kFlagPull: a ring record whose payload is a PullDescriptor
// (shm.h), not the message. kFlagUcxPacks: a message UCX packs as it sends
// (the sender's data is not contiguous): no get of it can be cheaper than the
// fragments, which a non-contiguous receive then takes whatever their size.
enum : uint16_t { kFlagSync = 1, kFlagPull = 2, kFlagUcxPacks = 4 };

// A point-to-point, non-synchronous message sends only the first
// kShortHeader bytes (the rest reads as zero): with UCX's own headers and a
// small payload it then fits one cache line of the shared-memory FIFO, where
// 32 bytes would spill into a second line and a second cross-core transfer
// per message. UCX 1.13 reads the header until the send completes, so a
// pending send keeps it in its SendOp, never on the stack.
struct WireHeader {
    uint32_t cid;
    int32_t source; // the sender's rank in its local group
    int32_t tag;
    uint32_t seq;   // per (communicator, sender, receiver)
    uint16_t coll;  // um_coll_t of the traffic, from the sender
    uint16_t flags;
    uint32_t reserved;
    uint64_t sender; // the SendOp to acknowledge, for synchronous sends
};
constexpr size_t kShortHeader = 16; // cid, source, tag, seq
static_assert(offsetof(WireHeader, coll) == kShortHeader, "the short header is a prefix");
static_assert(sizeof(WireHeader) == 32, "the long header is two short ones");

// The acknowledgement of a synchronous send: its header is the sender's SendOp.
using AckHeader = uint64_t;

// A sender offers its shared-memory ring (shm.h) to a receiver on the same
// node: the header names it; the receiver answers with a ShmReply.
// With the sender's pid and where it maps the ring, the receiver checks
// that it can read the sender's memory (single-copy pulls, shm.h).
struct ShmOffer {
    uint32_t peer;    // the sender's peer id, returned in the reply
    uint32_t cells;   // ring size, checked against the mapping
    int32_t pid;      // the sender's process
    uint32_t reserved;
    uint64_t segment; // the ring's address in the sender
    char name[48];    // shm_open name, NUL-terminated
};
struct ShmReply {
    uint32_t peer;
    uint32_t ok;   // 1: mapped, the sender may write; 0: keep to UCX
    uint32_t pull; // 1: the receiver read the sender's ring through CMA: it may pull
    uint32_t reserved;
};

} // namespace ubermatch::protocol

#endif

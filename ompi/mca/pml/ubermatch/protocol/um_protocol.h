/*
 * The ubermatch protocol core: the C interface the PML's C glue calls.
 *
 * The core owns the UCX worker, the wire protocol (active messages carrying
 * communicator id, source, tag and a per-peer sequence number), the holding of
 * out-of-sequence and early (unknown communicator) arrivals, the matching
 * engine of every communicator, eager and rendezvous delivery, truncation and
 * the synchronous-send acknowledgement. It knows nothing of Open MPI's
 * objects: requests are opaque cookies, and the glue is called back when an
 * operation completes.
 *
 * Threading: every call may come from any thread once the core was created
 * with thread_multiple. Callbacks are never made with the core's lock held,
 * and may be made from inside the calling function (an operation that
 * completes at once) or from um_proto_progress().
 */
#ifndef UM_PROTOCOL_H
#define UM_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "matching/ubermatch_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

enum um_proto_status {
    UM_PROTO_OK = 0,
    UM_PROTO_TRUNCATED = 1, /* the message was longer than the receive */
    UM_PROTO_ERROR = 2,     /* a transport or argument error */
    UM_PROTO_NOMEM = 3,     /* no memory for this operation (it alone fails) */
    UM_PROTO_ASSERTION = 4, /* the communicator's relaxed engine excludes this call (a
                               wildcard its assertions rule out); nothing was queued */
    UM_PROTO_AGAIN = 5      /* not now: the engine holds receives or messages */
};

/* The assertions a relaxed engine relies on (um_proto_comm_info_t.relaxed). */
enum um_proto_assert {
    UM_PROTO_ASSERT_NO_ANY_SOURCE = 1, /* mpi_assert_no_any_source */
    UM_PROTO_ASSERT_NO_ANY_TAG = 2,    /* mpi_assert_no_any_tag */
    UM_PROTO_ASSERT_NO_UNEXPECTED = 4, /* ubermatch_no_unexpected */
    UM_PROTO_ASSERT_ALLOW_OVERTAKING = 8 /* mpi_assert_allow_overtaking */
};

typedef struct um_proto um_proto_t;
typedef struct um_proto_comm um_proto_comm_t;
typedef struct um_proto_peer um_proto_peer_t;
typedef struct um_proto_msg um_proto_msg_t;

typedef struct um_proto_callbacks {
    /* A send's buffer may be reused (and, when synchronous, the receiver matched it). */
    void (*send_done)(void *cookie, int status);
    /* A receive holds its data: `received` bytes of a `length`-byte message. */
    void (*recv_done)(void *cookie, int32_t source, int32_t tag, size_t received,
                      size_t length, int status);
    /* For receives without a contiguous buffer: unpack `length` bytes, the
     * message's from `offset` on, into the user's buffer. One or more calls per
     * receive, together the message (what the receive can take), the first at
     * offset 0; in order except where UCX delivers a rendezvous in pieces (it
     * may not). All before recv_done. Returns 0, or nonzero when the piece
     * could not be unpacked where it belongs: the receive then ends with
     * UM_PROTO_ERROR, no later piece of it is passed, and the send is not
     * failed (its data was whole). */
    int (*recv_unpack)(void *cookie, size_t offset, const void *data, size_t length);
} um_proto_callbacks_t;

typedef struct um_proto_config {
    const char *backend;  /* the engine backend of every communicator */
    um_params_t params;   /* its parameters */
    int thread_multiple;  /* calls may come from several threads at once */
    /* With thread_multiple: each communicator matches in tail queues under their
     * own locks (matching/tailq.h) instead of under the core's one lock, so that
     * a thread posting a receive or probing runs while another matches arrivals. */
    int tailq;
    /* With tailq: the tail queues of each communicator split into this many
     * bins by (source, tag) (matching/tailq_bins.h), 1 .. 256; 1 (or 0): no bins. */
    int tailq_bins;
    const char *ucx_tls;         /* UCX_TLS of our worker, NULL: UCX's default */
    const char *ucx_rndv_thresh; /* UCX_RNDV_THRESH, NULL: UCX's default */
    /* Tests: every n-th allocation on the message path fails (0: none), to check
     * that it becomes an error of the operation concerned and nothing else. */
    unsigned fail_alloc_every;
    /* Largest message carried by a shared-memory ring to a peer on the same
     * node (0: none, every message through UCX); a ring under 16 times that
     * takes a 16th of its size, 8192 at least (um_proto_shm_counts_t). */
    size_t shm_eager_limit;
    /* Cells (of 64 bytes) of each ring this process makes, a power of two
     * holding four records of min(shm_eager_limit, 8192); 0: 4096 (256 KiB). */
    uint32_t shm_ring_cells;
    /* Messages from 12 KiB (and past the eager limit) to a peer whose ring is
     * up go as a record naming the sender's buffer, which the receiver reads
     * once matched (Linux CMA, checked when the ring is mapped); 0: UCX's
     * rendezvous. */
    int shm_pull;
    /* With shm_pull: contiguous messages up to this size (from 12 KiB) are
     * copied by the sender into shared memory the receiver maps, piece by
     * piece while the receiver copies out, instead of read by CMA from the
     * sender's buffer; 0: never. */
    size_t shm_stage_max;
    /* With shm_pull: how a send streaming rows (of up to 64 KiB) into shared
     * memory packs them: UM_PROTO_PACK_STAGE_MEASURE (0: through a stage in
     * this core's cache or straight, whichever measures cheaper as the job
     * runs), _ALWAYS (through the stage) or _NEVER (straight). */
    int shm_pack_stage;
} um_proto_config_t;

enum { UM_PROTO_PACK_STAGE_MEASURE = 0, UM_PROTO_PACK_STAGE_ALWAYS = 1, UM_PROTO_PACK_STAGE_NEVER = 2 };

/* hwloc's choice of shm_ring_cells for a process with local_procs processes of
 * its job on its node (itself included), and why, in one line. */
void um_proto_plan_rings(unsigned local_procs, size_t shm_eager_limit, uint32_t *cells, char *why,
                         size_t len);

/* A posted receive. The glue owns the memory (inside its request) and keeps it
 * until recv_done or a successful cancel. */
typedef struct um_proto_recv {
    void *cookie;
    void *buffer;     /* contiguous destination, NULL: deliver through recv_unpack */
    size_t capacity;  /* bytes the receive can take */
    int32_t source;   /* or UM_ANY_SOURCE */
    int32_t tag;      /* or UM_ANY_TAG */
    um_hint_t hint;
} um_proto_recv_t;

/* The protocol's state of one send, kept by the glue (inside its request)
 * until send_done: no allocation on the send path. */
typedef struct um_proto_send_op {
    uint64_t opaque[12];
} um_proto_send_op_t;

typedef struct um_proto_msg_info {
    int32_t source;
    int32_t tag;
    size_t length;
} um_proto_msg_info_t;

/* Creation fails, with a message in err, when UCX cannot start or the backend
 * or one of its parameters is not valid. */
int um_proto_create(const um_proto_config_t *config, const um_proto_callbacks_t *callbacks,
                    um_proto_t **proto, char *err, size_t errlen);
void um_proto_destroy(um_proto_t *proto);

/* The worker address to publish (modex); release it with um_proto_address_release. */
int um_proto_address(um_proto_t *proto, void **address, size_t *length);
void um_proto_address_release(um_proto_t *proto, void *address);

/* Drives UCX; returns the number of events processed. */
int um_proto_progress(um_proto_t *proto);
/* One round that completes every send whose receiver has finished with it
 * (pulls handed back, UCX's sends done); with threads it waits for another
 * thread's progress round rather than skipping. Returns the events processed. */
int um_proto_settle_sends(um_proto_t *proto);

/* local: the peer runs on this node (small messages may go through shared memory). */
um_proto_peer_t *um_proto_connect(um_proto_t *proto, const void *address, size_t length,
                                  int local, char *err, size_t errlen);
/* The UCX transports that reach a peer, e.g. "tcp/veth0.0(am,am_bw)", into
 * buf (truncated to len). */
void um_proto_peer_transports(um_proto_t *proto, um_proto_peer_t *peer, char *buf, size_t len);
/* Flushes and closes the endpoints, progressing until they are closed. */
void um_proto_disconnect(um_proto_t *proto, um_proto_peer_t **peers, size_t count);

/* A communicator: its id (equal in every member), this process's rank in the
 * local group and the size of the group it talks to (the remote group of an
 * intercommunicator), and the engine backend of its point-to-point traffic
 * (NULL: the configured one; a relaxed one gives Open MPI's own traffic, negative
 * tags, an engine of the configured backend of its own). Messages that arrived
 * for it before are matched now. */
int um_proto_comm_create(um_proto_t *proto, uint32_t cid, int32_t local_rank,
                         int32_t remote_size, const char *backend, um_proto_comm_t **comm,
                         char *err, size_t errlen);
/* Makes backend (NULL: the configured one) the engine of comm's point-to-point
 * traffic: UM_PROTO_OK when it is now (or was already), UM_PROTO_AGAIN when that
 * engine holds receives or messages (nothing changed), UM_PROTO_ERROR with a message
 * for an unknown backend. After an arrival broke ubermatch_no_unexpected, a
 * -nounexp backend is taken without that relaxation. */
int um_proto_comm_use(um_proto_t *proto, um_proto_comm_t *comm, const char *backend, char *err,
                      size_t errlen);
typedef struct um_proto_comm_facts {
    char backend[32];      /* the engine of point-to-point traffic */
    char coll_backend[32]; /* of Open MPI's own traffic when apart; "" when not */
    uint32_t relaxed;      /* UM_PROTO_ASSERT_* the engine relies on; 0: full matching */
    uint64_t refused;      /* arrivals no receive awaited under ubermatch_no_unexpected */
} um_proto_comm_info_t;
void um_proto_comm_info(um_proto_t *proto, um_proto_comm_t *comm, um_proto_comm_info_t *info);
void um_proto_comm_destroy(um_proto_t *proto, um_proto_comm_t *comm);
void um_proto_comm_stats(um_proto_t *proto, um_proto_comm_t *comm, um_stats_t *stats);
/* From now on every message that arrives on comm is offered, in MPI order per
 * source, before matching: fn(arg, source, tag, data, length) returns nonzero
 * when it took the message (copied the data, which is valid only during the
 * call), which then never reaches a receive or probe; 0 leaves it to matching.
 * data is NULL when the payload is not here (rendezvous, or lost to an
 * allocation failure): such a message cannot be taken. Synchronous sends are
 * not offered. fn runs on the thread that progresses, inside the core: it must
 * not call MPI. NULL fn: no hook. For a library that receives its own
 * traffic on a private communicator without probes (libmpix_am). */
typedef int (*um_proto_arrival_fn)(void *arg, int32_t source, int32_t tag, const void *data,
                                   size_t length);
void um_proto_comm_hook(um_proto_t *proto, um_proto_comm_t *comm, um_proto_arrival_fn fn,
                        void *arg);
/* Held messages: out of sequence, or for communicators not created yet. */
size_t um_proto_held(um_proto_t *proto);

/* What memory exhaustion cost so far (all 0 in a healthy run). */
typedef struct um_proto_fault_counts {
    uint64_t lost;         /* payloads not kept: their receives failed (UM_PROTO_NOMEM) */
    uint64_t dropped;      /* arrivals with no memory even for a descriptor */
    uint64_t reserve_used; /* spare descriptors taken when the heap refused */
} um_proto_faults_t;
void um_proto_faults(um_proto_t *proto, um_proto_faults_t *faults);
/* Shared-memory rings (shm_eager_limit): messages sent and received through
 * them, rings this process writes to and reads from. */
typedef struct um_proto_shm_count {
    uint64_t sent, received;
    uint64_t ring_bytes_in; /* cells of the rings read, as their senders sized them */
    uint32_t rings_out, rings_in;
    size_t eager_limit; /* largest message sent through a ring: shm_eager_limit or,
                         * with a ring under 16 times that, a 16th of it (8192 at least) */
    uint64_t pulls_sent; /* messages sent as pulls (shm_pull) */
    uint64_t pulls_read; /* messages this process read from their senders' memory */
    uint64_t pulls_mapped; /* of those, read from the sender's arena mapped here (no CMA) */
    uint64_t pulls_streamed; /* pulls sent whose record went before their data was packed */
    uint64_t pulls_staged; /* contiguous sends copied into the arena to be pulled (shm_stage_max) */
    uint64_t rows_staged, rows_straight; /* streamed rows packed through the stage / straight (shm_pack_stage) */
    uint64_t rows_cost_staged, rows_cost_straight; /* measure: each way's last cost, clock ticks per KiB (0: none) */
    uint32_t rings_cold; /* of rings_in, those idle long enough to be polled only in turn */
} um_proto_shm_counts_t;
void um_proto_shm_stats(um_proto_t *proto, um_proto_shm_counts_t *counts);
void um_proto_comm_dump(um_proto_t *proto, um_proto_comm_t *comm, FILE *out);
const char *um_proto_backend(const um_proto_t *proto);

/* Sends length bytes to rank dst of comm's remote group through peer, with
 * op as the send's state. When sync is set, send_done waits for the
 * receiver's match. */
int um_proto_send(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer, int32_t dst,
                  int32_t tag, const um_hint_t *hint, const void *data, size_t length, int sync,
                  um_proto_send_op_t *op, void *cookie);

/* Writes length bytes of a send's packed data, from offset on, into dest;
 * 0, or nonzero when it could not. */
typedef int (*um_proto_pack_fn)(void *arg, size_t offset, void *dest, size_t length);

/* um_proto_send of length bytes that pack(pack_arg, ...) writes into *buffer
 * (from um_proto_send_buffer), in order, before the call returns, or that UCX
 * packs as it sends (to a peer no ring reaches, and in windows of large ones).
 * *buffer NULL: the call takes one from um_proto_send_buffer only where it
 * packs into it and leaves it in *buffer, for the caller to give back once
 * the send completed, or after a failed call (UM_PROTO_NOMEM: none). Where the
 * send goes as a pull from this process's shared memory (single-threaded),
 * its record goes out first and the receiver unpacks each piece once it is
 * packed: packing and unpacking overlap. Elsewhere all is packed first.
 * Packing that fails before the record went out fails the call (nothing
 * sent); after, the send and its receive complete with UM_PROTO_ERROR.
 * rows: pack writes rows of a cache line or more (with memcpy); a small
 * message is then packed into a stage in this core's cache, and copied into
 * buffer by words (with threads, by one thread at a time; protocol.h,
 * kPackStage). */
int um_proto_send_packing(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer, int32_t dst,
                          int32_t tag, const um_hint_t *hint, void **buffer, size_t length, int sync,
                          um_proto_send_op_t *op, void *cookie, um_proto_pack_fn pack, void *pack_arg,
                          int rows);

/* A standard-mode send that UCX can complete inside the call (a short
 * message): returns 1 when it went out and needs no state kept, 0 when it did
 * not go and nothing happened (use um_proto_send). With thread_multiple only
 * through a shared-memory ring with room (a number taken could not be given
 * back). */
int um_proto_send_now(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer,
                      int32_t dst, int32_t tag, const um_hint_t *hint, const void *data,
                      size_t length);

int um_proto_post_recv(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *recv);
/* n receives of comm posted in order, as n um_proto_post_recv calls would, in
 * batches (MPI_Startall). *done: how many were posted; the status is the
 * first one that was not's (UM_PROTO_ASSERTION, UM_PROTO_ERROR). */
int um_proto_post_recv_batch(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *const *recvs,
                             size_t n, size_t *done);
/* *cancelled: the receive was still queued and is now withdrawn (no callback follows). */
int um_proto_cancel(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *recv,
                    int *cancelled);

/* Looks for the message a receive (source, tag) would take. With remove (MPI
 * mprobe) the message leaves the queue and *msg is set, to be received with
 * um_proto_msg_recv. */
int um_proto_probe(um_proto_t *proto, um_proto_comm_t *comm, int32_t source, int32_t tag,
                   const um_hint_t *hint, int remove, int *found, um_proto_msg_info_t *info,
                   um_proto_msg_t **msg);
int um_proto_msg_recv(um_proto_t *proto, um_proto_msg_t *msg, um_proto_recv_t *recv);

/* A call of the collective hint->coll (with hint->msg_size, hint->comm_size)
 * begins (begin != 0) or ends on comm: the engine's collective_begin/end.
 * UM_PROTO_ERROR when hint->coll is not a collective. */
int um_proto_collective(um_proto_t *proto, um_proto_comm_t *comm, const um_hint_t *hint,
                        int begin);

/* A buffer of at least length bytes for packed data to send, valid until
 * given back (with the same length); NULL without memory. Kept for reuse in
 * power-of-two classes, and where rings carry pulls taken from shared memory
 * that receivers on the node map and unpack from (no copy by CMA). */
void *um_proto_send_buffer(um_proto_t *proto, size_t length);
void um_proto_send_buffer_return(um_proto_t *proto, void *buffer, size_t length);

#ifdef __cplusplus
}
#endif

#endif /* UM_PROTOCOL_H */

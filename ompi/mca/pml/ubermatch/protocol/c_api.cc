// The C interface of the protocol core. No exception crosses it.
#include <cstring>
#include <new>

#include "ompi/mca/pml/ubermatch/protocol/protocol.h"
#include "ompi/mca/pml/ubermatch/protocol/topology.h"
#include "ompi/mca/pml/ubermatch/protocol/um_protocol.h"

using ubermatch::protocol::Comm;
using ubermatch::protocol::Message;
using ubermatch::protocol::Peer;
using ubermatch::protocol::Protocol;

namespace {

void set_error(char *err, size_t errlen, const char *msg) {
    if (err != nullptr && errlen > 0) {
        std::strncpy(err, msg, errlen - 1);
        err[errlen - 1] = '\0';
    }
}

// The opaque C types are the C++ objects.
Protocol *cxx(um_proto_t *p) { return reinterpret_cast<Protocol *>(p); }
const Protocol *cxx(const um_proto_t *p) { return reinterpret_cast<const Protocol *>(p); }
Comm *cxx(um_proto_comm_t *c) { return reinterpret_cast<Comm *>(c); }
Peer *cxx(um_proto_peer_t *p) { return reinterpret_cast<Peer *>(p); }

const um_hint_t kNoHint{};

} // namespace

extern "C" {

int um_proto_create(const um_proto_config_t *config, const um_proto_callbacks_t *callbacks,
                    um_proto_t **proto, char *err, size_t errlen) {
    *proto = nullptr;
    Protocol *p = nullptr;
    try {
        p = new Protocol(*config, *callbacks);
        p->start();
    } catch (const std::exception &e) {
        set_error(err, errlen, e.what());
        delete p;
        return UM_PROTO_ERROR;
    }
    *proto = reinterpret_cast<um_proto_t *>(p);
    return UM_PROTO_OK;
}

void um_proto_destroy(um_proto_t *proto) { delete cxx(proto); }

int um_proto_address(um_proto_t *proto, void **address, size_t *length) {
    ucp_address_t *addr = nullptr;
    if (ucp_worker_get_address(cxx(proto)->worker(), &addr, length) != UCS_OK) {
        return UM_PROTO_ERROR;
    }
    *address = addr;
    return UM_PROTO_OK;
}

void um_proto_address_release(um_proto_t *proto, void *address) {
    ucp_worker_release_address(cxx(proto)->worker(), static_cast<ucp_address_t *>(address));
}

int um_proto_progress(um_proto_t *proto) { return cxx(proto)->progress(); }

int um_proto_settle_sends(um_proto_t *proto) { return cxx(proto)->settle_sends(); }

um_proto_peer_t *um_proto_connect(um_proto_t *proto, const void *address, size_t length,
                                  int local, char *err, size_t errlen) {
    std::string why;
    Peer *peer = cxx(proto)->connect(address, length, local != 0, why);
    if (peer == nullptr) {
        set_error(err, errlen, why.c_str());
    }
    return reinterpret_cast<um_proto_peer_t *>(peer);
}

void um_proto_plan_rings(unsigned local_procs, size_t shm_eager_limit, uint32_t *cells, char *why,
                         size_t len) {
    try {
        const ubermatch::protocol::RingPlan plan =
            ubermatch::protocol::plan_rings_here(local_procs, shm_eager_limit);
        *cells = plan.cells;
        set_error(why, len, plan.why.c_str());
    } catch (const std::bad_alloc &) {
        *cells = 0;
        set_error(why, len, "no memory: rings of 256 KiB");
    }
}

void um_proto_peer_transports(um_proto_t *proto, um_proto_peer_t *peer, char *buf, size_t len) {
    try {
        set_error(buf, len, cxx(proto)->transports(*cxx(peer)).c_str());
    } catch (const std::bad_alloc &) {
        set_error(buf, len, "unknown (no memory)");
    }
}

void um_proto_disconnect(um_proto_t *proto, um_proto_peer_t **peers, size_t count) {
    cxx(proto)->disconnect(reinterpret_cast<Peer **>(peers), count);
}

int um_proto_comm_create(um_proto_t *proto, uint32_t cid, int32_t local_rank, int32_t remote_size,
                         const char *backend, um_proto_comm_t **comm, char *err, size_t errlen) {
    try {
        *comm = reinterpret_cast<um_proto_comm_t *>(cxx(proto)->comm_create(
            cid, local_rank, remote_size, backend != nullptr ? backend : ""));
        return UM_PROTO_OK;
    } catch (const std::exception &e) {
        set_error(err, errlen, e.what());
        *comm = nullptr;
        return UM_PROTO_ERROR;
    }
}

int um_proto_comm_use(um_proto_t *proto, um_proto_comm_t *comm, const char *backend, char *err,
                      size_t errlen) {
    try {
        return cxx(proto)->comm_use(cxx(comm), backend != nullptr ? backend : "") ? UM_PROTO_OK
                                                                                : UM_PROTO_AGAIN;
    } catch (const std::exception &e) {
        set_error(err, errlen, e.what());
        return UM_PROTO_ERROR;
    }
}

void um_proto_comm_info(um_proto_t *proto, um_proto_comm_t *comm, um_proto_comm_info_t *info) {
    *info = cxx(proto)->comm_info(cxx(comm));
}

void um_proto_comm_destroy(um_proto_t *proto, um_proto_comm_t *comm) {
    cxx(proto)->comm_destroy(cxx(comm));
}

void um_proto_comm_stats(um_proto_t *proto, um_proto_comm_t *comm, um_stats_t *stats) {
    *stats = cxx(proto)->comm_stats(cxx(comm));
}

void um_proto_comm_hook(um_proto_t *proto, um_proto_comm_t *comm, um_proto_arrival_fn fn,
                        void *arg) {
    cxx(proto)->comm_hook(cxx(comm), fn, arg);
}

size_t um_proto_held(um_proto_t *proto) { return cxx(proto)->held(); }

void um_proto_faults(um_proto_t *proto, um_proto_faults_t *faults) { *faults = cxx(proto)->faults(); }

void um_proto_shm_stats(um_proto_t *proto, um_proto_shm_counts_t *counts) {
    *counts = cxx(proto)->shm_counts();
}

void um_proto_comm_dump(um_proto_t *proto, um_proto_comm_t *comm, FILE *out) {
    cxx(proto)->comm_dump(cxx(comm), out);
}

const char *um_proto_backend(const um_proto_t *proto) { return cxx(proto)->backend().c_str(); }

int um_proto_send(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer, int32_t dst,
                  int32_t tag, const um_hint_t *hint, const void *data, size_t length, int sync,
                  um_proto_send_op_t *op, void *cookie) {
    return cxx(proto)->send(cxx(comm), cxx(peer), dst, tag, hint != nullptr ? *hint : kNoHint,
                            data, length, sync != 0, reinterpret_cast<ubermatch::protocol::SendOp *>(op),
                            cookie);
}

int um_proto_send_packing(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer, int32_t dst,
                          int32_t tag, const um_hint_t *hint, void **buffer, size_t length, int sync,
                          um_proto_send_op_t *op, void *cookie, um_proto_pack_fn pack, void *pack_arg,
                          int rows) {
    const ubermatch::protocol::Packer packer{pack, pack_arg, rows != 0, false};
    return cxx(proto)->send(cxx(comm), cxx(peer), dst, tag, hint != nullptr ? *hint : kNoHint, *buffer,
                            length, sync != 0, reinterpret_cast<ubermatch::protocol::SendOp *>(op), cookie,
                            &packer, buffer);
}

int um_proto_send_now(um_proto_t *proto, um_proto_comm_t *comm, um_proto_peer_t *peer,
                      int32_t dst, int32_t tag, const um_hint_t *hint, const void *data,
                      size_t length) {
    return cxx(proto)->send_now(cxx(comm), cxx(peer), dst, tag, hint != nullptr ? *hint : kNoHint,
                                data, length)
               ? 1
               : 0;
}

int um_proto_post_recv(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *recv) {
    try {
        return cxx(proto)->recv(cxx(comm), recv);
    } catch (const std::bad_alloc &) {
        return UM_PROTO_ERROR;
    }
}

int um_proto_post_recv_batch(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *const *recvs,
                             size_t n, size_t *done) {
    return cxx(proto)->recv_batch(cxx(comm), recvs, n, done);
}

int um_proto_cancel(um_proto_t *proto, um_proto_comm_t *comm, um_proto_recv_t *recv,
                    int *cancelled) {
    bool c = false;
    const int rc = cxx(proto)->cancel(cxx(comm), recv, &c);
    *cancelled = c ? 1 : 0;
    return rc;
}

int um_proto_probe(um_proto_t *proto, um_proto_comm_t *comm, int32_t source, int32_t tag,
                   const um_hint_t *hint, int remove, int *found, um_proto_msg_info_t *info,
                   um_proto_msg_t **msg) {
    Message *m = nullptr;
    const int rc = cxx(proto)->probe(cxx(comm), source, tag, hint != nullptr ? *hint : kNoHint,
                                remove != 0, &m, info);
    *found = m != nullptr;
    if (m != nullptr && msg != nullptr) {
        *msg = reinterpret_cast<um_proto_msg_t *>(m);
    }
    return rc;
}

int um_proto_msg_recv(um_proto_t *proto, um_proto_msg_t *msg, um_proto_recv_t *recv) {
    try {
        cxx(proto)->msg_recv(reinterpret_cast<Message *>(msg), recv);
        return UM_PROTO_OK;
    } catch (const std::bad_alloc &) {
        return UM_PROTO_ERROR;
    }
}

int um_proto_collective(um_proto_t *proto, um_proto_comm_t *comm, const um_hint_t *hint,
                        int begin) {
    if (hint == nullptr) {
        return UM_PROTO_ERROR;
    }
    return cxx(proto)->collective(cxx(comm), *hint, begin != 0);
}

void *um_proto_send_buffer(um_proto_t *proto, size_t length) { return cxx(proto)->send_buffer(length); }

void um_proto_send_buffer_return(um_proto_t *proto, void *buffer, size_t length) {
    if (buffer != nullptr) {
        cxx(proto)->send_buffer_return(buffer, length);
    }
}

} // extern "C"

/*
 * Non-contiguous sends of pml/ubermatch: the data packed into contiguous
 * memory that the protocol core sends (or a receiver pulls) as it is.
 *
 * A small message is packed into the module's staging buffer and sent inside
 * the call, as a contiguous one is: no request, no allocation. A larger one is
 * packed into a buffer of the protocol core's (um_proto_send_buffer): pooled,
 * since memory that malloc hands back to the kernel at every free comes back
 * as fresh pages whose faults cost a halo exchange more than the copy does
 * (64 KiB strided messages: half of the sender's time), and shared with the
 * node's receivers, which unpack straight from it.
 */
#ifndef PML_UBERMATCH_PACK_H
#define PML_UBERMATCH_PACK_H

#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include "opal/datatype/opal_convertor.h"

BEGIN_C_DECLS

/* Packed sizes up to this go inside the call (single-threaded): the staging
 * buffer's size. Past it a request and a pooled buffer, which outlives the call
 * (from 12 KiB the ring's receiver pulls from it). */
#define PML_UM_PACK_NOW_MAX 8192

void mca_pml_ubermatch_pack_init(void);
void mca_pml_ubermatch_pack_fini(void);

/* A datatype whose data is one element description repeated (vectors,
 * hvectors, 2-D subarrays, resized types): count instances `extent` apart,
 * each `blocks` blocks of `block` bytes `stride` apart from `disp`. These
 * pack and unpack in tight loops of their own (Open MPI's convertor calls
 * memcpy for every block: for a column of doubles, every 8 bytes). */
typedef struct mca_pml_ubermatch_strided {
    size_t block;
    ptrdiff_t stride;
    size_t blocks;
    ptrdiff_t disp;
    ptrdiff_t extent;
} mca_pml_ubermatch_strided_t;

bool mca_pml_ubermatch_strided_of(const ompi_datatype_t *datatype, mca_pml_ubermatch_strided_t *s);

/* Copies length bytes of the packed stream, from offset on, between packed and
 * the layout at buf: into packed (gather) or out of it. */
void mca_pml_ubermatch_strided_copy(const mca_pml_ubermatch_strided_t *s, void *buf, void *packed,
                                    size_t offset, size_t length, bool gather);

/* A send's data packed piece by piece, in order (um_proto_send_packing's
 * pack_arg for mca_pml_ubermatch_gather): a strided layout by our loops, any
 * other by conv, prepared by init and left clean by fini. */
typedef struct mca_pml_ubermatch_gather {
    bool strided;
    mca_pml_ubermatch_strided_t layout;
    const void *buf;
    opal_convertor_t *conv;
} mca_pml_ubermatch_gather_t;
void mca_pml_ubermatch_gather_init(mca_pml_ubermatch_gather_t *g, opal_convertor_t *conv,
                                   const void *buf, size_t count, ompi_datatype_t *datatype);
int mca_pml_ubermatch_gather(void *gather, size_t offset, void *dest, size_t length);
/* Moves conv to offset bytes of the packed stream unless it is there (pieces
 * out of order); false when it cannot get there. */
bool mca_pml_ubermatch_convertor_seek(opal_convertor_t *conv, size_t offset);
/* Whether g copies rows of a cache line or more (um_proto_send_packing's
 * rows): the convertor's layouts, strided blocks of 64 bytes or more. */
bool mca_pml_ubermatch_gather_rows(const mca_pml_ubermatch_gather_t *g);
void mca_pml_ubermatch_gather_fini(mca_pml_ubermatch_gather_t *g);

/* Packs count of datatype at buf into dest (size bytes) at once, with conv
 * where the layout needs it (left clean for its next use). */
int mca_pml_ubermatch_pack(opal_convertor_t *conv, const void *buf, size_t count,
                           ompi_datatype_t *datatype, void *dest, size_t size);

/* A standard or ready send of size (<= PML_UM_PACK_NOW_MAX) packed bytes of a
 * non-contiguous buffer, packed and sent inside the call when the protocol can
 * (single-threaded, short); false when it did not send, and nothing was sent. */
bool mca_pml_ubermatch_send_packed_now(const void *buf, size_t count, ompi_datatype_t *datatype,
                                       size_t size, um_proto_peer_t *peer, int dst, int tag,
                                       struct ompi_communicator_t *comm);

END_C_DECLS

#endif

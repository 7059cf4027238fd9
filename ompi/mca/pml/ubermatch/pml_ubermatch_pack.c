#include "ompi/mca/pml/ubermatch/pml_ubermatch_pack.h"

#include "ompi/runtime/mpiruntime.h"
#include "opal/datatype/opal_datatype_internal.h"

#include <stdlib.h>
#include <string.h>

static struct {
    opal_convertor_t conv; /* the staging convertor: single-threaded sends only */
    unsigned char stage[PML_UM_PACK_NOW_MAX];
} pack_state;

void mca_pml_ubermatch_pack_init(void)
{
    OBJ_CONSTRUCT(&pack_state.conv, opal_convertor_t);
}

void mca_pml_ubermatch_pack_fini(void)
{
    OBJ_DESTRUCT(&pack_state.conv);
}

/* --- strided layouts: one element description, repeated --- */

bool mca_pml_ubermatch_strided_of(const ompi_datatype_t *datatype, mca_pml_ubermatch_strided_t *s)
{
    const dt_type_desc_t *desc = &datatype->super.opt_desc;
    const ddt_elem_desc_t *e;
    if (1 != desc->used || NULL == desc->desc) {
        return false;
    }
    e = &desc->desc[0].elem;
    if (e->common.type < OPAL_DATATYPE_FIRST_TYPE || e->common.type >= OPAL_DATATYPE_UNAVAILABLE ||
        !(e->common.flags & OPAL_DATATYPE_FLAG_DATA) || 0 == e->count || 0 == e->blocklen) {
        return false;
    }
    s->block = e->blocklen * opal_datatype_basicDatatypes[e->common.type]->size;
    s->stride = e->extent;
    s->blocks = e->count;
    s->disp = e->disp;
    s->extent = datatype->super.ub - datatype->super.lb;
    return true;
}

/* n blocks of `block` bytes, `stride` apart at mem, to (gather) or from packed.
 * The common block sizes copy as one load and one store each. */
#define STRIDED_RUN(BLOCK)                                                            \
    do {                                                                              \
        if (gather) {                                                                 \
            for (size_t k = 0; k < n; ++k, mem += stride, packed += (BLOCK)) {         \
                memcpy(packed, mem, (BLOCK));                                         \
            }                                                                         \
        } else {                                                                      \
            for (size_t k = 0; k < n; ++k, mem += stride, packed += (BLOCK)) {         \
                memcpy(mem, packed, (BLOCK));                                         \
            }                                                                         \
        }                                                                             \
    } while (0)

static void strided_run(char *mem, ptrdiff_t stride, char *packed, size_t block, size_t n,
                        bool gather)
{
    switch (block) {
    case 4: STRIDED_RUN(4); break;
    case 8: STRIDED_RUN(8); break;
    case 16: STRIDED_RUN(16); break;
    case 32: STRIDED_RUN(32); break;
    default: STRIDED_RUN(block); break;
    }
}

void mca_pml_ubermatch_strided_copy(const mca_pml_ubermatch_strided_t *s, void *buf,
                                    void *packed_data, size_t offset, size_t length, bool gather)
{
    char *packed = packed_data;
    size_t b = offset / s->block;          /* the block the offset falls in */
    size_t within = offset % s->block;     /* ... and where in it */
    size_t j = b % s->blocks;              /* its index in its instance */
    char *instance = (char *) buf + (ptrdiff_t)(b / s->blocks) * s->extent + s->disp;
    while (length > 0) {
        char *mem = instance + (ptrdiff_t) j * s->stride;
        if (0 != within || length < s->block) { /* a piece's cut through a block */
            const size_t n = s->block - within < length ? s->block - within : length;
            if (gather) {
                memcpy(packed, mem + within, n);
            } else {
                memcpy(mem + within, packed, n);
            }
            packed += n;
            length -= n; /* 0 unless the block is done */
            within = 0;
            ++j;
        } else { /* whole blocks to the end of the instance or of the length */
            size_t n = s->blocks - j;
            if (n > length / s->block) {
                n = length / s->block;
            }
            strided_run(mem, s->stride, packed, s->block, n, gather);
            packed += n * s->block;
            length -= n * s->block;
            j += n;
        }
        if (j == s->blocks) {
            j = 0;
            instance += s->extent;
        }
    }
}

void mca_pml_ubermatch_gather_init(mca_pml_ubermatch_gather_t *g, opal_convertor_t *conv,
                                   const void *buf, size_t count, ompi_datatype_t *datatype)
{
    g->strided = mca_pml_ubermatch_strided_of(datatype, &g->layout);
    g->buf = buf;
    g->conv = conv;
    if (!g->strided) {
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &datatype->super, count,
                                                 buf, 0, conv);
    }
}

int mca_pml_ubermatch_gather(void *gather, size_t offset, void *dest, size_t length)
{
    const mca_pml_ubermatch_gather_t *g = gather;
    struct iovec iov = {dest, length};
    uint32_t iov_count = 1;
    size_t max = length;
    if (g->strided) {
        mca_pml_ubermatch_strided_copy(&g->layout, (void *) g->buf, dest, offset, length, true);
        return 0;
    }
    /* UCX may ask for a piece out of order. */
    if (!mca_pml_ubermatch_convertor_seek(g->conv, offset) ||
        opal_convertor_pack(g->conv, &iov, &iov_count, &max) < 0 || max != length) {
        return 1;
    }
    return 0;
}

bool mca_pml_ubermatch_convertor_seek(opal_convertor_t *conv, size_t offset)
{
    size_t position = offset;
    if (offset == conv->bConverted) { /* the last piece ended here: the common case */
        return true;
    }
    return OPAL_SUCCESS == opal_convertor_set_position(conv, &position) && position == offset;
}

bool mca_pml_ubermatch_gather_rows(const mca_pml_ubermatch_gather_t *g)
{
    return !g->strided || g->layout.block >= 64;
}

void mca_pml_ubermatch_gather_fini(mca_pml_ubermatch_gather_t *g)
{
    if (!g->strided) {
        opal_convertor_cleanup(g->conv);
    }
}

int mca_pml_ubermatch_pack(opal_convertor_t *conv, const void *buf, size_t count,
                           ompi_datatype_t *datatype, void *dest, size_t size)
{
    mca_pml_ubermatch_gather_t g;
    int rc;
    mca_pml_ubermatch_gather_init(&g, conv, buf, count, datatype);
    rc = mca_pml_ubermatch_gather(&g, 0, dest, size);
    mca_pml_ubermatch_gather_fini(&g);
    return 0 == rc ? OMPI_SUCCESS : OMPI_ERROR;
}

bool mca_pml_ubermatch_send_packed_now(const void *buf, size_t count, ompi_datatype_t *datatype,
                                       size_t size, um_proto_peer_t *peer, int dst, int tag,
                                       struct ompi_communicator_t *comm)
{
    um_hint_t hint;
    /* One staging buffer; the protocol sends inside the call only single-threaded anyway. */
    if (ompi_mpi_thread_multiple || size > PML_UM_PACK_NOW_MAX ||
        OMPI_SUCCESS != mca_pml_ubermatch_pack(&pack_state.conv, buf, count, datatype,
                                               pack_state.stage, size)) {
        return false;
    }
    mca_pml_ubermatch_hint(tag, size, comm, &hint);
    return 1 == um_proto_send_now(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), peer,
                                  dst, tag, &hint, pack_state.stage, size);
}

/*
 * What coll/ubermatch tells pml/ubermatch about the collectives it forwards.
 * Shared by the two components; plain C, no Open MPI object beyond the
 * communicator's name.
 *
 * The two are separate DSOs, and the coll one must not link against the PML
 * one (it must load, and stay inactive, under any PML). So the PML publishes
 * the address of its hooks (a mca_pml_ubermatch_coll_hooks_t, static in the
 * PML) in an internal, read-only MCA variable, pml_ubermatch_coll_hooks
 * (unsigned long long, hidden from ompi_info and MPI_T, never settable by a
 * user). coll/ubermatch reads it with mca_base_var_find() once it knows that
 * the selected PML is ubermatch: MCA variables are the one registry both
 * DSOs already share, and a component's variables live as long as the
 * component is loaded, which the selected PML is until MPI_Finalize.
 */
#ifndef PML_UBERMATCH_COLL_HOOKS_H
#define PML_UBERMATCH_COLL_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "matching/ubermatch_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ompi_communicator_t;

/* Raised whenever the structures below change; coll/ubermatch stays inactive
 * when the PML's differs from its own. */
#define MCA_PML_UBERMATCH_COLL_HOOKS_VERSION 1u

/* The variable's name: framework pml, component ubermatch. */
#define MCA_PML_UBERMATCH_COLL_HOOKS_VAR "coll_hooks"

/* mca_pml_ubermatch_coll_call_t.flags */
#define MCA_PML_UBERMATCH_COLL_NONBLOCKING 0x1u /* an MPI_I... call: it only starts the operation */

/* One call of a collective on a communicator, as coll/ubermatch sees it. */
typedef struct mca_pml_ubermatch_coll_call {
    um_coll_t coll;   /* the operation (UM_COLL_NEIGHBOR for the neighbourhood ones) */
    unsigned flags;   /* MCA_PML_UBERMATCH_COLL_* */
    size_t msg_size;  /* bytes of one process's block (see coll/ubermatch); 0 when unknown */
    int comm_size;    /* processes this one exchanges with: the communicator's size, the
                         remote group's for an intercommunicator */
    /* Nonblocking calls, at collective_end: the tags [tag_low, tag_high] the call
     * reserved on the communicator (c_nbc_tag) for its messages; none when
     * tag_low > tag_high. */
    int tag_low;
    int tag_high;
} mca_pml_ubermatch_coll_call_t;

typedef struct mca_pml_ubermatch_coll_hooks {
    unsigned version; /* MCA_PML_UBERMATCH_COLL_HOOKS_VERSION */
    /* Around every forwarded call, on the calling thread, always in pairs (also
     * when the call fails); calls may nest (a collective built from others). */
    void (*collective_begin)(struct ompi_communicator_t *comm,
                             const mca_pml_ubermatch_coll_call_t *call);
    void (*collective_end)(struct ompi_communicator_t *comm,
                           const mca_pml_ubermatch_coll_call_t *call);
} mca_pml_ubermatch_coll_hooks_t;

#ifdef __cplusplus
}
#endif

#endif /* PML_UBERMATCH_COLL_HOOKS_H */

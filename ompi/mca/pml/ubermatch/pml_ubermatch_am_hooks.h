/*
 * What pml/ubermatch offers libmpix_am (am/, MPI-interoperable active
 * messages), published as coll/ubermatch's hooks are (pml_ubermatch_coll_hooks.h):
 * the address of a mca_pml_ubermatch_am_hooks_t in the internal, read-only MCA
 * variable pml_ubermatch_am_hooks, which the library finds with
 * mca_base_var_find() at run time (it links against no component). Plain C,
 * no Open MPI header: the library is built with mpicc's flags only.
 */
#ifndef PML_UBERMATCH_AM_HOOKS_H
#define PML_UBERMATCH_AM_HOOKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the structure below changes; the library ignores hooks of
 * another version (and then probes, as under any other PML). */
#define MCA_PML_UBERMATCH_AM_HOOKS_VERSION 1u

/* The variable's name: framework pml, component ubermatch. */
#define MCA_PML_UBERMATCH_AM_HOOKS_VAR "am_hooks"

typedef struct mca_pml_ubermatch_am_hooks {
    unsigned version; /* MCA_PML_UBERMATCH_AM_HOOKS_VERSION */
    /* comm: an MPI_Comm (in Open MPI, its ompi_communicator_t *). From now on
     * every message on comm that arrives with no receive posted for it adds one
     * to *counter, on the thread that drives progress, before opal_progress's
     * later callbacks run; NULL stops. *counter must live until then. Returns 0,
     * or -1 when pml/ubermatch is not the selected PML or comm is not one of its. */
    int (*watch_unexpected)(void *comm, volatile uint64_t *counter);
} mca_pml_ubermatch_am_hooks_t;

#ifdef __cplusplus
}
#endif

#endif /* PML_UBERMATCH_AM_HOOKS_H */

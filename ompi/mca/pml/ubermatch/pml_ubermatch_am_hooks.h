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

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the structure below changes; the library ignores hooks of
 * another version (and then probes, as under any other PML). */
#define MCA_PML_UBERMATCH_AM_HOOKS_VERSION 1u

/* The variable's name: framework pml, component ubermatch. */
#define MCA_PML_UBERMATCH_AM_HOOKS_VAR "am_hooks"

/* Offered a message that arrived: nonzero when it took it (copied data, valid
 * only during the call); 0 leaves it to MPI matching. data is NULL when the
 * payload is not here yet (a rendezvous message): such a message must be left. */
typedef int (*mca_pml_ubermatch_am_arrival_fn)(void *arg, int source, int tag, const void *data,
                                                size_t length);

typedef struct mca_pml_ubermatch_am_hooks {
    unsigned version; /* MCA_PML_UBERMATCH_AM_HOOKS_VERSION */
    /* comm: an MPI_Comm (in Open MPI, its ompi_communicator_t *). From now on
     * every message that arrives on comm (but synchronous sends) is offered to
     * fn(arg, ...) before matching, in MPI order per source, on the thread that
     * drives progress and before opal_progress's later callbacks run; a message
     * fn takes never reaches a receive or probe. fn must not call MPI. NULL fn:
     * stop. Returns 0, or -1 when pml/ubermatch is not the selected PML or comm
     * is not one of its. */
    int (*set_arrival)(void *comm, mca_pml_ubermatch_am_arrival_fn fn, void *arg);
    /* Progresses pml/ubermatch alone (its rings and UCX worker: what fn is offered
     * arrives here), as its own blocking calls do between opal_progress calls;
     * returns what it delivered. */
    int (*progress)(void);
} mca_pml_ubermatch_am_hooks_t;

#ifdef __cplusplus
}
#endif

#endif /* PML_UBERMATCH_AM_HOOKS_H */

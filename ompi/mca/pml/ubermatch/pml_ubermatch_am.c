/*
 * The hooks libmpix_am calls (pml_ubermatch_am_hooks.h): its requests and
 * responses are taken at arrival, before matching, so that the library needs
 * neither probes (an empty MPI_Improbe costs a search and a nested
 * opal_progress; a found one a message object and MPI_Mrecv's copy) nor posted
 * receives, and can wait on our progress alone.
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"
#include "ompi/mca/pml/ubermatch/pml_ubermatch_am_hooks.h"

#include <string.h>

#include "ompi/mca/pml/base/base.h"

static int set_arrival(void *c, mca_pml_ubermatch_am_arrival_fn fn, void *arg)
{
    struct ompi_communicator_t *comm = (struct ompi_communicator_t *) c;
    um_proto_comm_t *proto;

    /* The component may be loaded, and its variable found, under another PML. */
    if (0 != strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name,
                    "ubermatch") ||
        NULL == comm || NULL == (proto = mca_pml_ubermatch_comm(comm))) {
        return -1;
    }
    um_proto_comm_hook(mca_pml_ubermatch.proto, proto, (um_proto_arrival_fn) fn, arg);
    return 0;
}

int mca_pml_ubermatch_register_am_hooks(void)
{
    static const mca_pml_ubermatch_am_hooks_t hooks = {
        .version = MCA_PML_UBERMATCH_AM_HOOKS_VERSION,
        .set_arrival = set_arrival,
        .progress = mca_pml_ubermatch_progress,
    };
    return mca_pml_ubermatch_publish_hooks(MCA_PML_UBERMATCH_AM_HOOKS_VAR,
                                           "Address of the hooks libmpix_am calls (internal)", &hooks);
}

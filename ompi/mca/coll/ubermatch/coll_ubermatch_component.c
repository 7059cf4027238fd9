/*
 * coll/ubermatch component: its MCA variables, and the decision to be active,
 * taken once per process: only under pml/ubermatch, whose hooks it finds in
 * the MCA variable pml_ubermatch_coll_hooks (pml_ubermatch_coll_hooks.h).
 */
#include "ompi/mca/coll/ubermatch/coll_ubermatch.h"

#include <string.h>

#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

static int component_register(void);
static int component_open(void);
static int component_close(void);
static int component_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *component_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

mca_coll_ubermatch_component_t mca_coll_ubermatch_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "ubermatch",
            .mca_component_major_version = UM_VERSION_MAJOR,
            .mca_component_minor_version = UM_VERSION_MINOR,
            .mca_component_release_version = UM_VERSION_RELEASE,
            .mca_open_component = component_open,
            .mca_close_component = component_close,
            .mca_register_component_params = component_register,
        },
        .collm_data = {
            .param_field = MCA_BASE_METADATA_PARAM_NONE,
        },
        .collm_init_query = component_init_query,
        .collm_comm_query = component_comm_query,
    },
    /* Above every module Open MPI ships (self 75, sync 50, tuned 30, basic and
     * libnbc 10; hcoll 90 where installed), which are all enabled below it; the
     * framework caps priorities at 100, where coll/monitoring, also a pure
     * forwarder, sits too (either order works). */
    .priority = 100,
    .verbose = 0,
    .output = -1,
    .hooks = NULL,
};

static int component_register(void)
{
    mca_base_component_t *c = &mca_coll_ubermatch_component.super.collm_version;

    (void) mca_base_component_var_register(
        c, "priority",
        "Priority of coll/ubermatch (0 .. 100). It forwards every collective to the modules "
        "of lower priority, so only those are seen by the ubermatch PML; a negative value "
        "disables it",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_ubermatch_component.priority);
    (void) mca_base_component_var_register(
        c, "verbose",
        "Verbosity of coll/ubermatch (0: silent, 1: whether it is active and why, 2: every "
        "communicator it wraps)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_coll_ubermatch_component.verbose);
    return OMPI_SUCCESS;
}

static int component_open(void)
{
    mca_coll_ubermatch_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_ubermatch_component.output,
                              mca_coll_ubermatch_component.verbose);
    return OMPI_SUCCESS;
}

static int component_close(void)
{
    mca_coll_ubermatch_component.hooks = NULL;
    opal_output_close(mca_coll_ubermatch_component.output);
    mca_coll_ubermatch_component.output = -1;
    return OMPI_SUCCESS;
}

/* pml/ubermatch's hooks, or NULL (with the reason in verbose output). */
static const mca_pml_ubermatch_coll_hooks_t *find_hooks(void)
{
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    const int out = mca_coll_ubermatch_component.output;
    const unsigned long long *address = NULL;
    const mca_pml_ubermatch_coll_hooks_t *hooks;
    int index;

    if (0 != strcmp(pml, "ubermatch")) {
        opal_output_verbose(1, out, "coll_ubermatch: not active: the PML is %s, not ubermatch",
                            pml);
        return NULL;
    }
    index = mca_base_var_find("ompi", "pml", "ubermatch", MCA_PML_UBERMATCH_COLL_HOOKS_VAR);
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &address, NULL, NULL) ||
        NULL == address || 0 == *address) {
        opal_output_verbose(1, out, "coll_ubermatch: not active: pml/ubermatch publishes no "
                                    "hooks (pml_ubermatch_" MCA_PML_UBERMATCH_COLL_HOOKS_VAR ")");
        return NULL;
    }
    hooks = (const mca_pml_ubermatch_coll_hooks_t *) (uintptr_t) *address;
    if (MCA_PML_UBERMATCH_COLL_HOOKS_VERSION != hooks->version) {
        opal_output_verbose(1, out,
                            "coll_ubermatch: not active: pml/ubermatch's hooks are version %u, "
                            "this component's %u (built from different trees?)",
                            hooks->version, MCA_PML_UBERMATCH_COLL_HOOKS_VERSION);
        return NULL;
    }
    return hooks;
}

/* After the PML's selection (ompi_mpi_init selects the PML first). */
static int component_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    mca_coll_ubermatch_component.hooks = find_hooks();
    if (NULL == mca_coll_ubermatch_component.hooks) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    opal_output_verbose(1, mca_coll_ubermatch_component.output,
                        "coll_ubermatch: active (priority %d): collectives are reported to "
                        "pml/ubermatch",
                        mca_coll_ubermatch_component.priority);
    return OMPI_SUCCESS;
}

static mca_coll_base_module_t *component_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority)
{
    (void) comm;
    if (NULL == mca_coll_ubermatch_component.hooks || mca_coll_ubermatch_component.priority < 0) {
        return NULL;
    }
    *priority = mca_coll_ubermatch_component.priority;
    return mca_coll_ubermatch_module_new();
}

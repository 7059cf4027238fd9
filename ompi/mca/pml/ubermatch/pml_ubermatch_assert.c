/*
 * MPI-4 info assertions per communicator (docs/relaxed.md). Open MPI 4.1.4
 * parses mpi_assert_no_any_source, _no_any_tag, _allow_overtaking and
 * _exact_length only for the keys a component subscribes to
 * (ompi_comm_assert_subscribe, which sets the bits of comm->c_assertions from
 * the communicator's info and again on every MPI_Comm_set_info); our own key
 * ubermatch_no_unexpected is subscribed the same way (opal_infosubscribe). A
 * PML is not told when they change: the receive path compares them with those
 * its engine was chosen for (mca_pml_ubermatch_assert_recv).
 */
#include "ompi/mca/pml/ubermatch/pml_ubermatch.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"

/* At most 26 characters: Open MPI 4.1 truncates longer subscribed keys (and keeps
 * the original value of none longer than that). */
#define PML_UM_KEY_NO_UNEXPECTED "ubermatch_no_unexpected"

int mca_pml_ubermatch_assert_register(void)
{
    mca_pml_ubermatch.config.assertions = "honour";
    return mca_base_component_var_register(
        &mca_pml_ubermatch_component.pmlm_version, "assertions",
        "What a communicator's info assertions do. Valid values: honour (a wildcard receive or "
        "probe they rule out fails with MPI_ERR_RANK or MPI_ERR_TAG; they choose relaxed engines "
        "(docs/relaxed.md): mpi_assert_no_any_source nosource, with mpi_assert_no_any_tag exact, "
        "with mpi_assert_allow_overtaking as well overtake, mpi_assert_no_any_source with "
        "mpi_assert_allow_overtaking overtake-anytag; with our ubermatch_no_unexpected each one's "
        "-nounexp form), all (the same as honour), ignore (as if no communicator had any)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_pml_ubermatch.config.assertions);
}

int mca_pml_ubermatch_assert_init(void)
{
    const char *v = mca_pml_ubermatch.config.assertions;
    /* all: once honour plus nosource, kept as a synonym since nosource indexes by tag */
    if (NULL != v && (0 == strcmp(v, "honour") || 0 == strcmp(v, "honor") || 0 == strcmp(v, "all"))) {
        mca_pml_ubermatch.assert_mask = PML_UM_ASSERT_ALL;
    } else if (NULL != v && 0 == strcmp(v, "ignore")) {
        mca_pml_ubermatch.assert_mask = 0;
    } else {
        opal_output(0, "pml_ubermatch: cannot start: pml_ubermatch_assertions = %s is not valid; "
                       "valid values are honour (or honor), all, ignore", NULL != v ? v : "(empty)");
        return OMPI_ERR_BAD_PARAM;
    }
    return OMPI_SUCCESS;
}

/* Open MPI's callback type: the value to keep in the communicator's info. */
static char *set_no_unexpected(opal_infosubscriber_t *obj, char *key, char *value)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_pml_ubermatch_comm_t *c = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    (void) key;
    if (NULL == c) {
        return NULL;
    }
    if (opal_str_to_bool(value)) {
        c->own_asserts |= PML_UM_ASSERT_NO_UNEXPECTED;
    } else {
        c->own_asserts &= ~PML_UM_ASSERT_NO_UNEXPECTED;
    }
    return (c->own_asserts & PML_UM_ASSERT_NO_UNEXPECTED) ? (char *) "true" : (char *) "false";
}

/* The relaxed engine for a set of assertions; NULL: none fits, the configured one.
 * allow_overtaking buys the overtaking hash once ANY_SOURCE is ruled out (with
 * ANY_TAG allowed, its -anytag form); exact_length buys nothing here yet
 * (docs/relaxed.md). */
static const char *backend_for(uint32_t a)
{
    const bool no_unexp = 0 != (a & PML_UM_ASSERT_NO_UNEXPECTED);
    if (!(a & OMPI_COMM_ASSERT_NO_ANY_SOURCE)) {
        return NULL;
    }
    if ((a & OMPI_COMM_ASSERT_NO_ANY_TAG) && (a & OMPI_COMM_ASSERT_ALLOW_OVERTAKE)) {
        return no_unexp ? "overtake-nounexp" : "overtake";
    }
    if (a & OMPI_COMM_ASSERT_ALLOW_OVERTAKE) {
        return no_unexp ? "overtake-anytag-nounexp" : "overtake-anytag";
    }
    if (a & OMPI_COMM_ASSERT_NO_ANY_TAG) {
        return no_unexp ? "exact-nounexp" : "exact";
    }
    return no_unexp ? "nosource-nounexp" : "nosource";
}

const char *mca_pml_ubermatch_assert_add_comm(struct ompi_communicator_t *comm)
{
    mca_pml_ubermatch_comm_t *c = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    c->own_asserts = 0;
    c->applied = 0;
    if (0 == mca_pml_ubermatch.assert_mask) {
        return NULL;
    }
    ompi_comm_assert_subscribe(comm, OMPI_COMM_ASSERT_NO_ANY_SOURCE);
    ompi_comm_assert_subscribe(comm, OMPI_COMM_ASSERT_NO_ANY_TAG);
    ompi_comm_assert_subscribe(comm, OMPI_COMM_ASSERT_ALLOW_OVERTAKE);
    ompi_comm_assert_subscribe(comm, OMPI_COMM_ASSERT_EXACT_LENGTH);
    opal_infosubscribe_subscribe(&comm->super, (char *) PML_UM_KEY_NO_UNEXPECTED, (char *) "false",
                                 set_no_unexpected);
    c->applied = mca_pml_ubermatch_assertions(comm, c);
    return backend_for(c->applied);
}

/* A process prints its first PML_UM_REFUSALS_SHOWN refusals: a program that
 * polls with a wildcard its assertion rules out would otherwise fill stderr
 * (each refused call still fails with its error). why: what rules it out. */
#define PML_UM_REFUSALS_SHOWN 8
static void report_refusal(struct ompi_communicator_t *comm, const char *wildcard, const char *why,
                           const char *error)
{
    static volatile int32_t shown = 0;
    const int32_t n = opal_atomic_add_fetch_32(&shown, 1);
    if (n <= PML_UM_REFUSALS_SHOWN) {
        opal_output(0, "pml_ubermatch: rank %d: %s receive or probe on %s, %s: %s%s",
                    ompi_comm_rank(comm), wildcard, comm->c_name, why, error,
                    PML_UM_REFUSALS_SHOWN == n ? " (this process prints no further refusals; "
                                                 "each still fails its call)"
                                               : "");
    }
}

int mca_pml_ubermatch_assert_refused(struct ompi_communicator_t *comm, int src)
{
    /* The assertions' check comes first, so the engine refusing is a relaxed
     * backend chosen for every communicator (or, with no memory to move its
     * queues, one whose assertion MPI_Comm_set_info took back). */
    const bool source = MPI_ANY_SOURCE == src;
    const char *wildcard = source ? "MPI_ANY_SOURCE" : "MPI_ANY_TAG";
    um_proto_comm_info_t info;
    char why[192];
    um_proto_comm_info(mca_pml_ubermatch.proto, mca_pml_ubermatch_comm(comm), &info);
    snprintf(why, sizeof(why), "whose engine is %s%s, which takes no %s", info.backend,
             0 == strcmp(info.backend, mca_pml_ubermatch.config.backend) ? " (pml_ubermatch_backend)" : "",
             wildcard);
    report_refusal(comm, wildcard, why, source ? "MPI_ERR_RANK" : "MPI_ERR_TAG");
    return source ? MPI_ERR_RANK : MPI_ERR_TAG;
}

int mca_pml_ubermatch_assert_slow(struct ompi_communicator_t *comm, int src, int tag,
                                  uint32_t now)
{
    mca_pml_ubermatch_comm_t *c = (mca_pml_ubermatch_comm_t *) comm->c_pml_comm;
    const bool user = tag >= 0 || MPI_ANY_TAG == tag; /* not Open MPI's own traffic */

    if (user && MPI_ANY_SOURCE == src && (now & OMPI_COMM_ASSERT_NO_ANY_SOURCE)) {
        report_refusal(comm, "MPI_ANY_SOURCE", "which asserts mpi_assert_no_any_source", "MPI_ERR_RANK");
        return MPI_ERR_RANK;
    }
    if (MPI_ANY_TAG == tag && (now & OMPI_COMM_ASSERT_NO_ANY_TAG)) {
        report_refusal(comm, "MPI_ANY_TAG", "which asserts mpi_assert_no_any_tag", "MPI_ERR_TAG");
        return MPI_ERR_TAG;
    }
    if (now != c->applied) {
        /* MPI_Comm_set_info changed them: switch engines once this one holds nothing. */
        char err[256];
        const char *backend = backend_for(now);
        const int rc = um_proto_comm_use(mca_pml_ubermatch.proto, c->proto, backend, err,
                                         sizeof(err));
        if (UM_PROTO_OK == rc) {
            PML_UM_VERBOSE(2, "communicator %u (%s): assertions 0x%x, engine %s",
                           comm->c_contextid, comm->c_name, (unsigned) now,
                           NULL != backend ? backend : mca_pml_ubermatch.config.backend);
            c->applied = now;
        } else if (UM_PROTO_ERROR == rc) {
            opal_output(0, "pml_ubermatch: %s: %s", comm->c_name, err);
            c->applied = now; /* said once; the engine stays */
        }
    }
    return OMPI_SUCCESS;
}

# pml/ubermatch: mca_pml_ubermatch.so, an MCA component (Makefile.am: where it
# is installed). Thin C glue over the C++ protocol core and the engine.
mcacomponent_LTLIBRARIES += ompi/mca/pml/ubermatch/mca_pml_ubermatch.la
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_SOURCES = \
	ompi/mca/pml/ubermatch/pml_ubermatch.h \
	ompi/mca/pml/ubermatch/pml_ubermatch.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_component.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_request.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_request.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_pack.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_pack.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_probe.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_pvar.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_assert.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_am_hooks.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_am.c
nodist_EXTRA_ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_SOURCES = $(UM_LT_LINK_AS_CXX)
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_CPPFLAGS = $(UM_OMPI_CPPFLAGS) $(UCX_CFLAGS)
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_CFLAGS = $(UM_OMPI_CFLAGS)
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_LIBADD = $(UM_PROTOCOL_LIBS) $(UM_OMPI_LIBS)
# -Bsymbolic-functions: calls inside the component (glue -> protocol -> engine)
# bind at link time, not through the PLT, on every message.
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_LDFLAGS = $(UM_COMPONENT_LDFLAGS) -Wl,-Bsymbolic-functions

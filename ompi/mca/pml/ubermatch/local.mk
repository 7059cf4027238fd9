# pml/ubermatch: mca_pml_ubermatch.so, installed into Open MPI's component
# directory. C glue over the C++ protocol core and the matching engine.
pmldir = $(ompi_componentdir)
pml_LTLIBRARIES = ompi/mca/pml/ubermatch/mca_pml_ubermatch.la

ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_SOURCES = \
	ompi/mca/pml/ubermatch/pml_ubermatch.h \
	ompi/mca/pml/ubermatch/pml_ubermatch.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_component.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_request.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_request.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_pvar.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_assert.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_am_hooks.h \
	ompi/mca/pml/ubermatch/pml_ubermatch_am.c
# The protocol core is C++: link with the C++ driver (automake's idiom for a
# target whose own sources are C).
nodist_EXTRA_ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_SOURCES = force-cxx-link.cc
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_CPPFLAGS) $(UCX_CFLAGS)
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_CFLAGS = $(AM_CFLAGS) $(OMPI_COMPONENT_CFLAGS)
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_LIBADD = \
	ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la \
	$(UCX_LIBS) $(MPI_LIBS) -lopen-pal
# -Bsymbolic-functions: calls inside the component (glue -> protocol -> engine)
# bind at link time, not through the PLT, on every message.
ompi_mca_pml_ubermatch_mca_pml_ubermatch_la_LDFLAGS = -module -avoid-version -L$(OMPI_LIBDIR) \
	-Wl,-Bsymbolic-functions

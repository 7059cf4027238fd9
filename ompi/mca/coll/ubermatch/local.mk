# coll/ubermatch: mca_coll_ubermatch.so, installed into Open MPI's component
# directory. Forwards every collective to the modules below it and reports the
# calls to pml/ubermatch; it does not link against the PML (see
# ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h).
colldir = $(ompi_componentdir)
coll_LTLIBRARIES = ompi/mca/coll/ubermatch/mca_coll_ubermatch.la

ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_SOURCES = \
	ompi/mca/coll/ubermatch/coll_ubermatch.h \
	ompi/mca/coll/ubermatch/coll_ubermatch_component.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_module.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_blocking.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_nonblocking.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_neighbor.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_CPPFLAGS)
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_CFLAGS = $(AM_CFLAGS) $(OMPI_COMPONENT_CFLAGS)
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_LIBADD = $(MPI_LIBS) -lopen-pal
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_LDFLAGS = -module -avoid-version -L$(OMPI_LIBDIR)

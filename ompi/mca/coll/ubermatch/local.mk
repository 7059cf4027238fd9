# coll/ubermatch: mca_coll_ubermatch.so, an MCA component (Makefile.am: where it
# is installed). Forwards every collective to the modules below it and reports
# the calls to pml/ubermatch; it does not link against the PML (see
# ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h).
mcacomponent_LTLIBRARIES += ompi/mca/coll/ubermatch/mca_coll_ubermatch.la
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_SOURCES = \
	ompi/mca/coll/ubermatch/coll_ubermatch.h \
	ompi/mca/coll/ubermatch/coll_ubermatch_component.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_module.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_blocking.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_nonblocking.c \
	ompi/mca/coll/ubermatch/coll_ubermatch_neighbor.c \
	ompi/mca/pml/ubermatch/pml_ubermatch_coll_hooks.h
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_CPPFLAGS = $(UM_OMPI_CPPFLAGS)
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_CFLAGS = $(UM_OMPI_CFLAGS)
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_LIBADD = $(UM_OMPI_LIBS)
ompi_mca_coll_ubermatch_mca_coll_ubermatch_la_LDFLAGS = $(UM_COMPONENT_LDFLAGS)

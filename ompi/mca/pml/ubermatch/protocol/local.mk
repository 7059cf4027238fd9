# The protocol core of pml/ubermatch: C++ over UCX, hwloc and the engine. It is
# built without Open MPI's include paths, so that "knows no Open MPI object" is
# the compiler's to enforce, and is tested alone (test/protocol/).
noinst_LTLIBRARIES += ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la
ompi_mca_pml_ubermatch_protocol_libubermatch_protocol_la_SOURCES = \
	ompi/mca/pml/ubermatch/protocol/um_protocol.h \
	ompi/mca/pml/ubermatch/protocol/wire.h \
	ompi/mca/pml/ubermatch/protocol/shm.h \
	ompi/mca/pml/ubermatch/protocol/shm.cc \
	ompi/mca/pml/ubermatch/protocol/stage_choice.h \
	ompi/mca/pml/ubermatch/protocol/protocol.h \
	ompi/mca/pml/ubermatch/protocol/buffer_pool.h \
	ompi/mca/pml/ubermatch/protocol/message.h \
	ompi/mca/pml/ubermatch/protocol/protocol.cc \
	ompi/mca/pml/ubermatch/protocol/arrival.cc \
	ompi/mca/pml/ubermatch/protocol/delivery.cc \
	ompi/mca/pml/ubermatch/protocol/send.cc \
	ompi/mca/pml/ubermatch/protocol/peer.cc \
	ompi/mca/pml/ubermatch/protocol/relaxed.cc \
	ompi/mca/pml/ubermatch/protocol/topology.h \
	ompi/mca/pml/ubermatch/protocol/topology.cc \
	ompi/mca/pml/ubermatch/protocol/c_api.cc
ompi_mca_pml_ubermatch_protocol_libubermatch_protocol_la_CPPFLAGS = $(UM_PROTOCOL_CPPFLAGS)
ompi_mca_pml_ubermatch_protocol_libubermatch_protocol_la_LIBADD = $(UM_ENGINE_LIBS) $(UCX_LIBS) $(HWLOC_LIBS)

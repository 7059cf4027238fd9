# The protocol core's rings against the cache (hwloc's ring sizes, protocol/topology.h).
noinst_PROGRAMS += bench/protocol/ring_footprint
bench_protocol_ring_footprint_SOURCES = bench/protocol/ring_footprint.cc
bench_protocol_ring_footprint_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS) $(HWLOC_CFLAGS)
bench_protocol_ring_footprint_LDADD = ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la \
	$(UCX_LIBS) $(HWLOC_LIBS)

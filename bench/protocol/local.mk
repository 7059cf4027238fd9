# The protocol core's benchmark (bench/protocol/): ring_footprint, a process's
# shared-memory rings against its L2 cache (hwloc's ring sizes, protocol/topology.h).
noinst_PROGRAMS += bench/protocol/ring_footprint
bench_protocol_ring_footprint_SOURCES = bench/protocol/ring_footprint.cc
bench_protocol_ring_footprint_CPPFLAGS = $(UM_PROTOCOL_CPPFLAGS)
bench_protocol_ring_footprint_LDADD = $(UM_PROTOCOL_LIBS)

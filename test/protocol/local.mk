# The protocol core alone: two cores with their own UCX workers in one process.
check_PROGRAMS += test/protocol/protocol_tests
TESTS += test/protocol/protocol_tests
test_protocol_protocol_tests_SOURCES = test/protocol/protocol_tests.cc
test_protocol_protocol_tests_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS)
test_protocol_protocol_tests_LDADD = ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la $(UCX_LIBS)

# The shared-memory ring alone (protocol/shm.h).
check_PROGRAMS += test/protocol/shm_tests
TESTS += test/protocol/shm_tests
test_protocol_shm_tests_SOURCES = test/protocol/shm_tests.cc
test_protocol_shm_tests_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS)
test_protocol_shm_tests_LDADD = ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la $(UCX_LIBS)

# hwloc's ring sizes (protocol/topology.h) on synthetic topologies.
check_PROGRAMS += test/protocol/topology_tests
TESTS += test/protocol/topology_tests
test_protocol_topology_tests_SOURCES = test/protocol/topology_tests.cc
test_protocol_topology_tests_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS) $(HWLOC_CFLAGS)
test_protocol_topology_tests_LDADD = ompi/mca/pml/ubermatch/protocol/libubermatch_protocol.la \
	$(UCX_LIBS) $(HWLOC_LIBS)

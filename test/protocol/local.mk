# The protocol core's tests: protocol_tests (two cores with their own UCX
# workers in one process), shm_tests (the shared-memory ring alone) and
# topology_tests (hwloc's ring sizes on synthetic topologies).
check_PROGRAMS += test/protocol/protocol_tests test/protocol/shm_tests test/protocol/topology_tests
TESTS += test/protocol/protocol_tests test/protocol/shm_tests test/protocol/topology_tests
test_protocol_protocol_tests_SOURCES = test/protocol/protocol_tests.cc test/protocol/shm_protocol_tests.cc \
	test/protocol/arena_tests.cc test/protocol/unpack_tests.cc \
	test/protocol/relaxed_switch_tests.cc test/protocol/staged_tests.cc test/protocol/stage_choice_tests.cc \
	test/protocol/pair.h
test_protocol_protocol_tests_CPPFLAGS = $(UM_PROTOCOL_CPPFLAGS)
test_protocol_protocol_tests_LDADD = $(UM_PROTOCOL_LIBS)
test_protocol_shm_tests_SOURCES = test/protocol/shm_tests.cc
test_protocol_shm_tests_CPPFLAGS = $(UM_PROTOCOL_CPPFLAGS)
test_protocol_shm_tests_LDADD = $(UM_PROTOCOL_LIBS)
test_protocol_topology_tests_SOURCES = test/protocol/topology_tests.cc
test_protocol_topology_tests_CPPFLAGS = $(UM_PROTOCOL_CPPFLAGS)
test_protocol_topology_tests_LDADD = $(UM_PROTOCOL_LIBS)

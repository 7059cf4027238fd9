# The MPI tests (test/mpi/): standard MPI programs that check a PML through the
# MPI API (any PML: run-mpi-tests.sh runs them under ob1 too). Each is one
# test/mpi/<name>.c on mpitest.h; test/mpi/run-one.sh runs it, for make check
# (under --mca pml ubermatch) and for run-mpi-tests.sh (any mpirun arguments),
# which takes their list and order from here (print-mpi-tests).
UM_MPI_TESTS = \
	test/mpi/pingpong \
	test/mpi/ordering \
	test/mpi/unexpected \
	test/mpi/probe \
	test/mpi/persistent \
	test/mpi/ssend \
	test/mpi/modes \
	test/mpi/cancel \
	test/mpi/truncation \
	test/mpi/datatypes \
	test/mpi/intercomm \
	test/mpi/threads \
	test/mpi/thread_order \
	test/mpi/collectives \
	test/mpi/coll_variants \
	test/mpi/newcomm \
	test/mpi/rma \
	test/mpi/lifetime \
	test/mpi/status_fields \
	test/mpi/assertions \
	test/mpi/alloc_faults \
	test/mpi/bigmsg
check_PROGRAMS += $(UM_MPI_TESTS)
TESTS += $(UM_MPI_TESTS)
EXTRA_DIST += test/mpi/mpitest.h test/mpi/run-one.sh test/mpi/run-mpi-tests.sh test/mpi/README.md \
	test/mpi/check-component.sh
print-mpi-tests:
	@echo $(UM_MPI_TESTS)
.PHONY: print-mpi-tests

# Each test: its one source (automake's default, test/mpi/<name>.c), on MPI.
test_mpi_pingpong_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_pingpong_LDADD = $(MPI_LIBS)
test_mpi_ordering_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_ordering_LDADD = $(MPI_LIBS)
test_mpi_unexpected_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_unexpected_LDADD = $(MPI_LIBS)
test_mpi_probe_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_probe_LDADD = $(MPI_LIBS)
test_mpi_persistent_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_persistent_LDADD = $(MPI_LIBS)
test_mpi_ssend_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_ssend_LDADD = $(MPI_LIBS)
test_mpi_modes_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_modes_LDADD = $(MPI_LIBS)
test_mpi_cancel_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_cancel_LDADD = $(MPI_LIBS)
test_mpi_truncation_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_truncation_LDADD = $(MPI_LIBS)
test_mpi_datatypes_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_datatypes_LDADD = $(MPI_LIBS)
test_mpi_intercomm_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_intercomm_LDADD = $(MPI_LIBS)
test_mpi_threads_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_threads_LDADD = $(MPI_LIBS)
test_mpi_thread_order_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_thread_order_LDADD = $(MPI_LIBS)
test_mpi_collectives_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_collectives_LDADD = $(MPI_LIBS)
test_mpi_coll_variants_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_coll_variants_LDADD = $(MPI_LIBS)
test_mpi_newcomm_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_newcomm_LDADD = $(MPI_LIBS)
test_mpi_rma_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_rma_LDADD = $(MPI_LIBS)
test_mpi_lifetime_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_lifetime_LDADD = $(MPI_LIBS)
test_mpi_status_fields_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_status_fields_LDADD = $(MPI_LIBS)
test_mpi_assertions_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_assertions_LDADD = $(MPI_LIBS)
test_mpi_alloc_faults_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_alloc_faults_LDADD = $(MPI_LIBS)
test_mpi_bigmsg_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_bigmsg_LDADD = $(MPI_LIBS)

# Built with the tests, run by replay/test-replay.sh only (spawn.c says why).
check_PROGRAMS += test/mpi/spawn
test_mpi_spawn_CFLAGS = $(UM_MPI_CFLAGS)
test_mpi_spawn_LDADD = $(MPI_LIBS)

# The examples (examples/): engine_demo, the engine alone through its C
# interface (as the PML calls it), installed as the quickest check that the
# engine and its backends work; and MPI programs: pingpong_demo (the main
# job's), mpit_queues (reads the pvars), coll_demo (for coll/ubermatch).
bin_PROGRAMS += examples/engine_demo
examples_engine_demo_SOURCES = examples/engine_demo.c
nodist_EXTRA_examples_engine_demo_SOURCES = $(UM_LINK_AS_CXX)
examples_engine_demo_LDADD = $(UM_ENGINE_LIBS)

noinst_PROGRAMS += examples/mpi/pingpong_demo examples/mpi/mpit_queues examples/mpi/coll_demo
examples_mpi_pingpong_demo_SOURCES = examples/mpi/pingpong_demo.c
examples_mpi_pingpong_demo_CFLAGS = $(UM_MPI_CFLAGS)
examples_mpi_pingpong_demo_LDADD = $(MPI_LIBS)
examples_mpi_mpit_queues_SOURCES = examples/mpi/mpit_queues.c
examples_mpi_mpit_queues_CFLAGS = $(UM_MPI_CFLAGS)
examples_mpi_mpit_queues_LDADD = $(MPI_LIBS)
examples_mpi_coll_demo_SOURCES = examples/mpi/coll_demo.c
examples_mpi_coll_demo_CFLAGS = $(UM_MPI_CFLAGS)
examples_mpi_coll_demo_LDADD = $(MPI_LIBS)

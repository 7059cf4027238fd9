# MPI examples, built against Open MPI without the wrapper compiler.
noinst_PROGRAMS += examples/mpi/pingpong_demo examples/mpi/mpit_queues examples/mpi/coll_demo
examples_mpi_pingpong_demo_SOURCES = examples/mpi/pingpong_demo.c
examples_mpi_pingpong_demo_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
examples_mpi_pingpong_demo_LDADD = $(MPI_LIBS)
examples_mpi_mpit_queues_SOURCES = examples/mpi/mpit_queues.c
examples_mpi_mpit_queues_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
examples_mpi_mpit_queues_LDADD = $(MPI_LIBS)
examples_mpi_coll_demo_SOURCES = examples/mpi/coll_demo.c
examples_mpi_coll_demo_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
examples_mpi_coll_demo_LDADD = $(MPI_LIBS)

# MPI benchmarks: latency, message rate and bandwidth against ob1 and pml_ucx.
noinst_PROGRAMS += bench/mpi/p2p_bench
bench_mpi_p2p_bench_SOURCES = bench/mpi/p2p_bench.c
bench_mpi_p2p_bench_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
bench_mpi_p2p_bench_LDADD = $(MPI_LIBS)
EXTRA_DIST += bench/mpi/compare-pmls.sh
# The deep-queue benchmark (issues 6 and 7): a window of messages matched behind N
# queued entries; six-shapes.sh and bench/run-all.sh run it.
noinst_PROGRAMS += bench/mpi/queue_bench
bench_mpi_queue_bench_SOURCES = bench/mpi/queue_bench.c
bench_mpi_queue_bench_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
bench_mpi_queue_bench_LDADD = $(MPI_LIBS)
EXTRA_DIST += bench/mpi/six-shapes.sh bench/mpi/common.sh bench/run-all.sh bench/plot-deepq.gp
# Bytes of matching structures per communicator: every backend against ob1's
# per-peer structures (sizes from Open MPI's installed headers).
noinst_PROGRAMS += bench/mpi/queue_memory
bench_mpi_queue_memory_SOURCES = bench/mpi/queue_memory.c
bench_mpi_queue_memory_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_CPPFLAGS)
bench_mpi_queue_memory_CFLAGS = $(AM_CFLAGS) $(OMPI_COMPONENT_CFLAGS)
# The engine is C++: link with the C++ driver.
nodist_EXTRA_bench_mpi_queue_memory_SOURCES = dummy.cxx
bench_mpi_queue_memory_LDADD = matching/libubermatch_matching.la
# 10^6 unexpected messages from several senders: held memory and drain order (issue 11).
noinst_PROGRAMS += bench/mpi/unexpected_flood
bench_mpi_unexpected_flood_SOURCES = bench/mpi/unexpected_flood.c
bench_mpi_unexpected_flood_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
bench_mpi_unexpected_flood_LDADD = $(MPI_LIBS)
EXTRA_DIST += bench/mpi/message-path.sh
# Multithreaded message rate (issue 13, seed 002 Fig. 8): threads posting
# receives while messages arrive; bench/threads/mpi-rate.sh runs it.
noinst_PROGRAMS += bench/mpi/thread_rate
bench_mpi_thread_rate_SOURCES = bench/mpi/thread_rate.c
bench_mpi_thread_rate_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -pthread
bench_mpi_thread_rate_LDADD = $(MPI_LIBS) -lpthread
EXTRA_DIST += bench/threads/mpi-rate.sh

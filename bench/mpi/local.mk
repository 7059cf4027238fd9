# The MPI benchmarks (bench/mpi/): p2p_bench (latency, message rate, bandwidth
# against ob1 and pml_ucx: compare-pmls.sh, message-path.sh), queue_bench (a
# window matched behind N queued entries: six-shapes.sh, bench/run-all.sh),
# queue_memory (bytes of matching structures per communicator, every backend
# against ob1's, sizes from Open MPI's installed headers), unexpected_flood
# (10^6 unexpected messages: held memory, drain order), thread_rate (the
# multithreaded message rate: bench/threads/mpi-rate.sh) and idle_peers (two
# ranks' latency beside a node's idle processes: docs/message-path.md, round 9).
noinst_PROGRAMS += bench/mpi/p2p_bench bench/mpi/queue_bench bench/mpi/queue_memory \
	bench/mpi/unexpected_flood bench/mpi/thread_rate bench/mpi/idle_peers
bench_mpi_p2p_bench_SOURCES = bench/mpi/p2p_bench.c
bench_mpi_p2p_bench_CFLAGS = $(UM_MPI_CFLAGS)
bench_mpi_p2p_bench_LDADD = $(MPI_LIBS)
bench_mpi_queue_bench_SOURCES = bench/mpi/queue_bench.c
bench_mpi_queue_bench_CFLAGS = $(UM_MPI_CFLAGS)
bench_mpi_queue_bench_LDADD = $(MPI_LIBS)
bench_mpi_queue_memory_SOURCES = bench/mpi/queue_memory.c
nodist_EXTRA_bench_mpi_queue_memory_SOURCES = $(UM_LINK_AS_CXX)
bench_mpi_queue_memory_CPPFLAGS = $(UM_OMPI_CPPFLAGS)
bench_mpi_queue_memory_CFLAGS = $(UM_OMPI_CFLAGS)
bench_mpi_queue_memory_LDADD = $(UM_ENGINE_LIBS)
bench_mpi_unexpected_flood_SOURCES = bench/mpi/unexpected_flood.c
bench_mpi_unexpected_flood_CFLAGS = $(UM_MPI_CFLAGS)
bench_mpi_unexpected_flood_LDADD = $(MPI_LIBS)
bench_mpi_thread_rate_SOURCES = bench/mpi/thread_rate.c
bench_mpi_thread_rate_CFLAGS = $(UM_MPI_CFLAGS) -pthread
bench_mpi_thread_rate_LDADD = $(MPI_LIBS) -lpthread
bench_mpi_idle_peers_SOURCES = bench/mpi/idle_peers.c
bench_mpi_idle_peers_CFLAGS = $(UM_MPI_CFLAGS)
bench_mpi_idle_peers_LDADD = $(MPI_LIBS)
EXTRA_DIST += bench/mpi/compare-pmls.sh bench/mpi/message-path.sh bench/mpi/six-shapes.sh \
	bench/mpi/common.sh bench/run-all.sh bench/plot-deepq.gp bench/threads/mpi-rate.sh

# MPI benchmarks: latency, message rate and bandwidth against ob1 and pml_ucx.
noinst_PROGRAMS += bench/mpi/p2p_bench
bench_mpi_p2p_bench_SOURCES = bench/mpi/p2p_bench.c
bench_mpi_p2p_bench_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
bench_mpi_p2p_bench_LDADD = $(MPI_LIBS)
EXTRA_DIST += bench/mpi/compare-pmls.sh

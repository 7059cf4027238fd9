# MPI-interoperable active messages (am/): libmpix_am, installed with its
# header, its self-checking test and its benchmark (bench/am/). The targets sit
# at the top of the build tree: automake reserves the am_ prefix, so names
# derived from am/... would clash with its own variables.
lib_LTLIBRARIES += libmpix_am.la
include_HEADERS += am/mpix_am.h
libmpix_am_la_SOURCES = am/mpix_am.c am/am_target.c am/am_epoch.c am/am_credit.c am/am_range.c am/am_thread.c \
    am/am_internal.h am/mpix_am.h
libmpix_am_la_CFLAGS = $(UM_MPI_CFLAGS)
libmpix_am_la_LIBADD = $(MPI_LIBS) -ldl

noinst_PROGRAMS += mpix_am_test mpix_am_thread_test mpix_am_random_test mpix_am_bench
mpix_am_test_SOURCES = am/test_am.c am/test_amv.c am/test_am.h am/test_check.h
mpix_am_test_CFLAGS = $(UM_MPI_CFLAGS)
mpix_am_test_LDADD = libmpix_am.la $(MPI_LIBS)
mpix_am_thread_test_SOURCES = am/test_am_threads.c am/test_check.h
mpix_am_thread_test_CFLAGS = $(UM_MPI_CFLAGS)
mpix_am_thread_test_LDADD = libmpix_am.la $(MPI_LIBS) -lpthread
mpix_am_random_test_SOURCES = am/test_am_random.c am/test_check.h
mpix_am_random_test_CFLAGS = $(UM_MPI_CFLAGS)
mpix_am_random_test_LDADD = libmpix_am.la $(MPI_LIBS)
mpix_am_bench_SOURCES = bench/am/am_bench.c
mpix_am_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/am
mpix_am_bench_CFLAGS = $(UM_MPI_CFLAGS)
mpix_am_bench_LDADD = libmpix_am.la $(MPI_LIBS)
EXTRA_DIST += bench/am/run.sh am/tsan-threads.sh am/asan.sh

# MPI-interoperable active messages (issue 16): libmpix_am and its tests.
lib_LTLIBRARIES = am/libmpix_am.la
include_HEADERS = am/mpix_am.h
am_libmpix_am_la_SOURCES = am/mpix_am.c am/mpix_am.h
am_libmpix_am_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
am_libmpix_am_la_LIBADD = $(MPI_LIBS)
am_test_am_SOURCES = am/test_am.c
am_test_am_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
am_test_am_LDADD = am/libmpix_am.la $(MPI_LIBS)

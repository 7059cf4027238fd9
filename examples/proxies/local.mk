# The proxy applications (examples/proxies/, seed 000): small MPI programs with
# the queue behaviour of the paper's applications; smoke.sh checks them in the
# test command, bench/seed000/run-paper-figures.sh measures the engines on them.
noinst_PROGRAMS += examples/proxies/radix examples/proxies/nbody examples/proxies/miniamr \
	examples/proxies/fds
UM_PROXY_LIBS = $(MPI_LIBS) -lm
examples_proxies_radix_SOURCES = examples/proxies/radix.c examples/proxies/proxy.h
examples_proxies_radix_CFLAGS = $(UM_MPI_CFLAGS)
examples_proxies_radix_LDADD = $(UM_PROXY_LIBS)
examples_proxies_nbody_SOURCES = examples/proxies/nbody.c examples/proxies/proxy.h
examples_proxies_nbody_CFLAGS = $(UM_MPI_CFLAGS)
examples_proxies_nbody_LDADD = $(UM_PROXY_LIBS)
examples_proxies_miniamr_SOURCES = examples/proxies/miniamr.c examples/proxies/proxy.h
examples_proxies_miniamr_CFLAGS = $(UM_MPI_CFLAGS)
examples_proxies_miniamr_LDADD = $(UM_PROXY_LIBS)
examples_proxies_fds_SOURCES = examples/proxies/fds.c examples/proxies/proxy.h
examples_proxies_fds_CFLAGS = $(UM_MPI_CFLAGS)
examples_proxies_fds_LDADD = $(UM_PROXY_LIBS)
EXTRA_DIST += examples/proxies/smoke.sh bench/seed000/run-paper-figures.sh bench/seed000/figures.py

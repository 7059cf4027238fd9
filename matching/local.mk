# The matching engine: plain C++17, no MPI or UCX, linked into the PML, the
# tests, the benchmark and the demo.
noinst_LTLIBRARIES += matching/libubermatch_matching.la
matching_libubermatch_matching_la_SOURCES = \
	matching/ubermatch_engine.h \
	matching/engine.h matching/engine.cc \
	matching/queue.h \
	matching/registry.h matching/registry.cc \
	matching/c_api.cc \
	matching/list.h matching/list.cc \
	matching/perpeer.h matching/perpeer.cc \
	matching/bins.h matching/bins.cc

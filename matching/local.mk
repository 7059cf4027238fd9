# The matching engine (matching/): plain C++17, no MPI or UCX. A convenience
# library linked into the PML, the tests, the benchmarks and the tools, and
# libubermatch.so with its C header for standalone use.
noinst_LTLIBRARIES += matching/libubermatch_matching.la
# The core (C interface, base class, queues, registry, traces), the backends of
# the README's table (list .. auto, the seed-000 pnp/col family, the relaxed
# nosource, exact and overtake), the tail queues and the scalar SIMD kernels.
matching_libubermatch_matching_la_SOURCES = \
	matching/ubermatch_engine.h \
	matching/engine.h matching/engine.cc \
	matching/queue.h matching/ticks.h \
	matching/registry.h matching/registry.cc \
	matching/c_api.cc \
	matching/trace.h matching/trace_format.h matching/trace_sink.h matching/um_trace.h matching/trace_record.cc matching/trace_read.cc \
	matching/trace_writer.h matching/trace_writer.cc \
	matching/list.h matching/list.cc \
	matching/perpeer.h matching/perpeer.cc \
	matching/bins.h matching/bins.cc \
	matching/blocks.h matching/block_engine.h \
	matching/vector.h matching/vector.cc \
	matching/fuzzy.h matching/fuzzy.cc \
	matching/key_index.h matching/auto.h matching/auto.cc \
	matching/tailq.h matching/tailq.cc \
	matching/tailq_bins.h matching/tailq_bins.cc \
	matching/simd/kernels.h matching/simd/kernels_scalar.cc \
	matching/simd/dispatch.h matching/simd/dispatch.cc \
	matching/element.h matching/smallmap.h \
	matching/pnp.h matching/pnp.cc \
	matching/col.h matching/col.cc \
	matching/colpnp.h matching/colpnp.cc \
	matching/nosource.h matching/nosource.cc \
	matching/exact.h matching/exact.cc \
	matching/overtake_table.h matching/overtake.h matching/overtake.cc
matching_libubermatch_matching_la_LIBADD = \
	matching/simd/libum_kernels_avx2.la matching/simd/libum_kernels_avx512.la

# The SIMD kernels of the vector and fuzzy backends, one convenience library
# per instruction set, each built with its own target flags (and nothing else
# in it: see matching/simd/kernels.h); dispatch.cc picks one at run time.
noinst_LTLIBRARIES += matching/simd/libum_kernels_avx2.la matching/simd/libum_kernels_avx512.la
matching_simd_libum_kernels_avx2_la_SOURCES = matching/simd/kernels_avx2.cc matching/simd/kernels.h
matching_simd_libum_kernels_avx2_la_CXXFLAGS = $(AM_CXXFLAGS) -mavx2
matching_simd_libum_kernels_avx512_la_SOURCES = matching/simd/kernels_avx512.cc matching/simd/kernels.h
matching_simd_libum_kernels_avx512_la_CXXFLAGS = $(AM_CXXFLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512dq

# The engine for standalone use, installed (the PML links the convenience
# library into itself instead).
lib_LTLIBRARIES += matching/libubermatch.la
include_HEADERS += matching/ubermatch_engine.h
matching_libubermatch_la_SOURCES =
nodist_EXTRA_matching_libubermatch_la_SOURCES = $(UM_LT_LINK_AS_CXX)
matching_libubermatch_la_LIBADD = $(UM_ENGINE_LIBS)
matching_libubermatch_la_LDFLAGS = -version-info 0:0:0

# The matching engine: plain C++17, no MPI or UCX, linked into the PML, the
# tests, the benchmark and the demo.
noinst_LTLIBRARIES += matching/libubermatch_matching.la
matching_libubermatch_matching_la_SOURCES = \
	matching/ubermatch_engine.h \
	matching/engine.h matching/engine.cc \
	matching/queue.h \
	matching/registry.h matching/registry.cc \
	matching/c_api.cc \
	matching/trace.h matching/um_trace.h matching/trace_record.cc matching/trace_read.cc \
	matching/list.h matching/list.cc \
	matching/perpeer.h matching/perpeer.cc \
	matching/bins.h matching/bins.cc \
	matching/blocks.h matching/block_engine.h \
	matching/vector.h matching/vector.cc \
	matching/fuzzy.h matching/fuzzy.cc \
	matching/key_index.h matching/auto.h matching/auto.cc \
	matching/tailq.h matching/tailq.cc \
	matching/simd/kernels.h matching/simd/kernels_scalar.cc \
	matching/simd/dispatch.h matching/simd/dispatch.cc

# The SIMD kernels of the vector and fuzzy backends, one convenience library
# per instruction set, each built with its own target flags (and nothing else
# in it: see matching/simd/kernels.h); dispatch.cc picks one at run time.
noinst_LTLIBRARIES += matching/simd/libum_kernels_avx2.la matching/simd/libum_kernels_avx512.la
matching_simd_libum_kernels_avx2_la_SOURCES = matching/simd/kernels_avx2.cc matching/simd/kernels.h
matching_simd_libum_kernels_avx2_la_CXXFLAGS = $(AM_CXXFLAGS) -mavx2
matching_simd_libum_kernels_avx512_la_SOURCES = matching/simd/kernels_avx512.cc matching/simd/kernels.h
matching_simd_libum_kernels_avx512_la_CXXFLAGS = $(AM_CXXFLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512dq
matching_libubermatch_matching_la_LIBADD = \
	matching/simd/libum_kernels_avx2.la matching/simd/libum_kernels_avx512.la

# The seed-000 backends: pnp, col and their compositions (colpnp, col+list, list+pnp).
matching_libubermatch_matching_la_SOURCES += \
	matching/element.h matching/smallmap.h \
	matching/pnp.h matching/pnp.cc \
	matching/col.h matching/col.cc \
	matching/colpnp.h matching/colpnp.cc

# The engine for standalone use: libubermatch.so and its C header, installed
# (the PML links the convenience library above into itself instead).
lib_LTLIBRARIES += matching/libubermatch.la
matching_libubermatch_la_SOURCES =
# (a C++ link: the engine needs libstdc++; the file does not exist)
nodist_EXTRA_matching_libubermatch_la_SOURCES = matching/link-as-cxx.cxx
matching_libubermatch_la_LIBADD = matching/libubermatch_matching.la
matching_libubermatch_la_LDFLAGS = -version-info 0:0:0
include_HEADERS += matching/ubermatch_engine.h
# Issue 14: relaxed backends for communicators with MPI-4 matching assertions.
matching_libubermatch_matching_la_SOURCES += \
	matching/nosource.h matching/nosource.cc \
	matching/exact.h matching/exact.cc \
	matching/overtake_table.h matching/overtake.h matching/overtake.cc

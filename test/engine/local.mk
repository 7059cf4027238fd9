# Engine tests: edge cases and the differential test against the reference model.
check_LTLIBRARIES = test/engine/libengine_test_support.la
test_engine_libengine_test_support_la_SOURCES = \
	test/engine/catch_main.cc test/engine/test_options.h \
	test/engine/oracle.h test/engine/oracle.cc \
	test/engine/workload.h test/engine/workload.cc

UM_ENGINE_TEST_LIBS = test/engine/libengine_test_support.la matching/libubermatch_matching.la

check_PROGRAMS += test/engine/unit_tests test/engine/differential_tests
TESTS += test/engine/unit_tests test/engine/differential_tests

test_engine_unit_tests_SOURCES = test/engine/unit_tests.cc
test_engine_unit_tests_LDADD = $(UM_ENGINE_TEST_LIBS)

test_engine_differential_tests_SOURCES = test/engine/differential_tests.cc
test_engine_differential_tests_LDADD = $(UM_ENGINE_TEST_LIBS)

# Seed 000 (pnp, col, colpnp, col+list, list+pnp): partner promotion, levels, caps, profiling.
test_engine_unit_tests_SOURCES += test/engine/seed000_tests.cc

# Issue 5: the SIMD backends and kernels (vector, fuzzy32/16/8).
test_engine_unit_tests_SOURCES += test/engine/simd_tests.cc

# Seed 000 item 6: the engine's timers (search and restructuring time).
test_engine_unit_tests_SOURCES += test/engine/timers_tests.cc

# Issue 7: the auto backend (thresholds, hysteresis, memory bound, collective apart).
test_engine_unit_tests_SOURCES += test/engine/auto_tests.cc

# Issue 14: the relaxed backends (nosource, exact and their no-unexpected forms).
test_engine_unit_tests_SOURCES += test/engine/relaxed_tests.cc

# Issue 17: matching traces (addresses to ids, reuse, threads, refusals).
test_engine_unit_tests_SOURCES += test/engine/trace_tests.cc

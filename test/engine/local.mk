# The engine's tests (Catch2): unit_tests (edge cases of the core and of each
# family of backends, the timers, the traces) and differential_tests (every
# backend against the reference model oracle.cc on seeded random workloads;
# batch_tests.cc: the batch calls against the single calls).
check_LTLIBRARIES += test/engine/libengine_test_support.la
test_engine_libengine_test_support_la_SOURCES = \
	test/engine/catch_main.cc test/engine/test_options.h \
	test/engine/oracle.h test/engine/oracle.cc \
	test/engine/workload.h test/engine/workload.cc test/engine/parallel.h
UM_ENGINE_TEST_LIBS = test/engine/libengine_test_support.la $(UM_ENGINE_LIBS)

check_PROGRAMS += test/engine/unit_tests test/engine/differential_tests
TESTS += test/engine/unit_tests test/engine/differential_tests
test_engine_unit_tests_SOURCES = \
	test/engine/unit_tests.cc \
	test/engine/seed000_tests.cc \
	test/engine/simd_tests.cc \
	test/engine/timers_tests.cc \
	test/engine/auto_tests.cc \
	test/engine/key_index_tests.cc \
	test/engine/relaxed_tests.cc \
	test/engine/trace_tests.cc \
	test/engine/trace_writer_tests.cc \
	test/engine/trace_test_dir.h test/engine/trace_old_versions.h
test_engine_unit_tests_LDADD = $(UM_ENGINE_TEST_LIBS)
test_engine_differential_tests_SOURCES = test/engine/differential_tests.cc test/engine/batch_tests.cc
test_engine_differential_tests_LDADD = $(UM_ENGINE_TEST_LIBS)

# The tail queues and the trace recorder under ThreadSanitizer: built and run
# by tailq_tsan.sh and trace_tsan.sh (g++ with -fsanitize=thread, which this
# build's flags cannot be mixed with; tsan_build.sh).
EXTRA_DIST += test/engine/tailq_concurrent.cc test/engine/tailq_tsan.sh test/engine/trace_tsan.sh \
	test/engine/tsan_build.sh

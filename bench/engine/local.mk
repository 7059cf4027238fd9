# The engine benchmark (Google Benchmark) and its plot script.
noinst_PROGRAMS += bench/engine/engine_bench
bench_engine_engine_bench_SOURCES = bench/engine/engine_bench.cc
bench_engine_engine_bench_LDADD = matching/libubermatch_matching.la -lbenchmark -lpthread
EXTRA_DIST += bench/engine/plot-engine-bench.py bench/engine/run.sh

# Time per matched pair behind 1 .. 65536 entries, per shape (issue 12 item 3).
noinst_PROGRAMS += bench/engine/depth_sweep
bench_engine_depth_sweep_SOURCES = bench/engine/depth_sweep.cc
bench_engine_depth_sweep_LDADD = matching/libubermatch_matching.la

# What recording a matching trace costs per message, the engine alone (issue 17).
noinst_PROGRAMS += bench/engine/trace_cost
bench_engine_trace_cost_SOURCES = bench/engine/trace_cost.cc
bench_engine_trace_cost_LDADD = matching/libubermatch_matching.la

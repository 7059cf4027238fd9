# The engine's benchmarks: engine_bench (Google Benchmark; run.sh, the plot
# script) and depth_sweep (time per matched pair behind 1 .. 65536 entries).
noinst_PROGRAMS += bench/engine/engine_bench bench/engine/depth_sweep
bench_engine_engine_bench_SOURCES = bench/engine/engine_bench.cc
bench_engine_engine_bench_LDADD = $(UM_ENGINE_LIBS) -lbenchmark -lpthread
bench_engine_depth_sweep_SOURCES = bench/engine/depth_sweep.cc
bench_engine_depth_sweep_LDADD = $(UM_ENGINE_LIBS)
EXTRA_DIST += bench/engine/plot-engine-bench.py bench/engine/run.sh

# What recording a matching trace costs per message, the engine alone (issue 17).
noinst_PROGRAMS += bench/engine/trace_cost
bench_engine_trace_cost_SOURCES = bench/engine/trace_cost.cc
bench_engine_trace_cost_LDADD = $(UM_ENGINE_LIBS)

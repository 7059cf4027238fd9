# The GPU engine (matching/gpu/): its probe, differential test and benchmark in
# one program, one nvcc call (automake knows no .cu), built by `make all` where
# configure found nvcc.
if HAVE_NVCC
UM_GPU_TEST = matching/gpu/gpu_match_test$(EXEEXT)
noinst_DATA += $(UM_GPU_TEST)
CLEANFILES += $(UM_GPU_TEST)
$(UM_GPU_TEST): $(srcdir)/matching/gpu/gpu_match_test.cu $(srcdir)/matching/gpu/gpu_match.cuh \
		$(srcdir)/test/engine/oracle.cc $(srcdir)/test/engine/oracle.h
	@mkdir -p matching/gpu
	$(NVCC) -std=c++17 -O2 -arch=sm_90 -Werror all-warnings -I$(top_srcdir) -o $@ \
		$(srcdir)/matching/gpu/gpu_match_test.cu $(srcdir)/test/engine/oracle.cc
endif
EXTRA_DIST += matching/gpu/gpu_match.cuh matching/gpu/gpu_match_test.cu

# The engine demo, in C through the engine's C interface (as the PML calls it).
# Installed: the quickest check that the engine and its backends work.
bin_PROGRAMS += examples/engine_demo
examples_engine_demo_SOURCES = examples/engine_demo.c
# The engine is C++: link with the C++ driver.
nodist_EXTRA_examples_engine_demo_SOURCES = dummy.cxx
examples_engine_demo_LDADD = matching/libubermatch_matching.la

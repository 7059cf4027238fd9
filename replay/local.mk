# ubermatch-replay (replay/): replays a matching trace (pml_ubermatch_trace)
# through every backend and recommends one; installed. Its test and the scripts
# around it are run from the source tree.
bin_PROGRAMS += replay/ubermatch-replay
replay_ubermatch_replay_SOURCES = replay/replay.cc
replay_ubermatch_replay_LDADD = $(UM_ENGINE_LIBS)
if HAVE_OTF2
replay_ubermatch_replay_SOURCES += replay/otf2_export.cc replay/otf2_export.h
replay_ubermatch_replay_CPPFLAGS = $(AM_CPPFLAGS) -DUM_HAVE_OTF2 $(OTF2_CFLAGS)
replay_ubermatch_replay_LDADD += $(OTF2_LIBS)
endif
EXTRA_DIST += replay/test-replay.sh replay/plot-queue-depth.py replay/rank-check.sh \
	replay/trace-overhead.sh replay/plot-search-cost.py

# ubermatch-replay: replays a matching trace (pml_ubermatch_trace) through every
# backend and recommends one.
bin_PROGRAMS += replay/ubermatch-replay
replay_ubermatch_replay_SOURCES = replay/replay.cc
replay_ubermatch_replay_LDADD = matching/libubermatch_matching.la
EXTRA_DIST += replay/test-replay.sh replay/plot-queue-depth.py replay/rank-check.sh replay/trace-overhead.sh replay/plot-search-cost.py

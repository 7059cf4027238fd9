/* Matching traces from C (the PML glue): pml_ubermatch_trace. matching/trace.h
 * has the format and the C++ side. */
#ifndef UBERMATCH_MATCHING_UM_TRACE_H
#define UBERMATCH_MATCHING_UM_TRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every engine created after this records into dir/rank-R.umt (tag given:
 * dir/TAG-rank-R.umt); NULL or "": off. threads: non-zero under
 * MPI_THREAD_MULTIPLE (records then take a lock). write_mode: 0 through the
 * page cache, 1 direct I/O where the file system takes it, 2 the page cache
 * until it is slow, then direct (matching/trace_writer.h). job: the run's job
 * id, in each file's header. Returns 0, or -1 with a message in err when dir
 * cannot be used. */
int um_trace_start(const char *dir, int threads, int write_mode, unsigned job, const char *tag, char *err,
                   size_t errlen);

/* While recording, called now and then from progress that found nothing to do:
 * what is recorded reaches the file once a call finds nothing new since the last. */
void um_trace_idle(void);

#ifdef __cplusplus
}
#endif

#endif

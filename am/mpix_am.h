/* MPI-interoperable active messages (Zhao, Balaji, Gropp, Thakur, CCGrid 2013).
 * AMs are RMA operations of a window epoch: issue inside fence or lock epochs,
 * complete at the closing fence, MPI_Win_unlock(_all), MPI_Win_flush(_all),
 * MPI_Win_flush_local(_all) (the output in place) or MPI_Win_complete.  Window
 * info key "am_pack_threshold" (default 0.8): MPIX_Amv packs its output when the
 * generated share is below this (1.0: always), else sends it whole.  Under
 * MPI_THREAD_MULTIPLE any thread may call these; calls on one window run one
 * at a time, and handlers run one at a time per process, in any thread that
 * progresses: a handler must not rely on the thread it runs in. */
#ifndef MPIX_AM_H
#define MPIX_AM_H
#include <mpi.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Handler run at the target once per segment: one input segment in, one
 * output segment out, the target persistent buffer (in its window) in place. */
typedef int MPIX_AM_USER_FUNCTION(const void *input, int input_count, MPI_Datatype input_type,
                                  void *output, int output_count, MPI_Datatype output_type,
                                  void *persistent, int persistent_count,
                                  MPI_Datatype persistent_type);

/* Vector handler (MPIX_Amv): run at the target on a unit of num_segments
 * segments (one segment or all of an AM's, as the runtime chooses, in order);
 * the output of segment s starts at output + s * output_count
 * elements (fixed offsets), and the handler writes how many elements it
 * generated for segment s into output_segment_counts[s] (at most output_count). */
typedef int MPIX_AMV_USER_FUNCTION(const void *input, int input_count, MPI_Datatype input_type,
                                   void *output, int output_count, MPI_Datatype output_type,
                                   int *output_segment_counts, int num_segments,
                                   void *persistent, int persistent_count,
                                   MPI_Datatype persistent_type);

typedef int MPIX_Am_op;

/* Register a handler; every process registers the same handlers in the same order,
 * before any AM can reach it (e.g. before creating the window): an AM naming a
 * handler its target has not registered yet fails with MPI_ERR_OP. */
int MPIX_Am_op_create(MPIX_AM_USER_FUNCTION *fn, MPIX_Am_op *op);
int MPIX_Amv_op_create(MPIX_AMV_USER_FUNCTION *fn, MPIX_Am_op *op);

int MPIX_Am(const void *origin_input_addr, int origin_input_segment_count,
            MPI_Datatype origin_input_datatype, void *origin_output_addr,
            int origin_output_segment_count, MPI_Datatype origin_output_datatype,
            int num_segments, int target_rank, MPI_Aint target_disp,
            int target_persistent_count, MPI_Datatype target_persistent_datatype,
            MPIX_Am_op am_op, MPI_Win win);

/* Like MPIX_Am, with an MPIX_Amv_op_create handler: output_segment_counts
 * (num_segments ints) receives the element count each output segment holds;
 * the origin output keeps fixed offsets (segment s at s * origin_output_segment_count);
 * past a segment's count its bytes are undefined (untouched where the output came packed). */
int MPIX_Amv(const void *origin_input_addr, int origin_input_segment_count,
             MPI_Datatype origin_input_datatype, void *origin_output_addr,
             int origin_output_segment_count, MPI_Datatype origin_output_datatype,
             int output_segment_counts[], int num_segments, int target_rank, MPI_Aint target_disp,
             int target_persistent_count, MPI_Datatype target_persistent_datatype,
             MPIX_Am_op am_op, MPI_Win win);

/* Not in the paper: time this origin spent in buffer-reservation messages on win
 * and how many round trips it made (for the benchmark's synchronization time). */
int MPIX_Am_win_get_sync(MPI_Win win, double *seconds, long *handshakes);

int MPIX_Am_win_buffer_attach(void *buffer, int size, MPI_Win win);
int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win);

#ifdef __cplusplus
}
#endif
#endif

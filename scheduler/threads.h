// Threads: how many, and where they run.
//
// The count is, in order: an explicit request (--threads N), CLEF_NUM_THREADS,
// OMP_NUM_THREADS, else the physical cores hwloc reports. OpenMP regions are
// one per op (kernels split independent outputs with static schedules, never
// a reduction), so results do not depend on the count.
#ifndef CLEF_THREADS_H
#define CLEF_THREADS_H

// The count the rules above give (≥ 1). requested ≤ 0 means "not given".
// *source, if non-NULL, is set to "--threads", "CLEF_NUM_THREADS",
// "OMP_NUM_THREADS" or "hwloc physical cores".
int clef_threads_resolve(int requested, const char **source);

// Applies the count to OpenMP (omp_set_num_threads) and binds OpenMP thread
// i to physical core i mod cores (hwloc; more threads than cores share them).
// Returns the count. CLEF_VERBOSE=1 prints the choice and the binding.
int clef_threads_setup(int requested);
// The same for a team that starts at physical core first_core: thread i on
// core (first_core + i) mod cores (runs side by side in one process, as a
// sweep's workers, each on cores of its own).
int clef_threads_setup_at(int requested, int first_core);

#endif

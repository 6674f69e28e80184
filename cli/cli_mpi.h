// The MPI layer (issue 21): every MPI call of clef is in cli/mpi.c. Built
// without MPI (CLEF_MPI=OFF, or no MPI found) the same functions see one
// rank, and a process a launcher started is refused (exit 2).
//
// A process joins MPI only when a launcher started it (mpirun, srun: the
// environment says so) and only for the commands that use it (train, sweep);
// everything else runs as one process, as before.
#ifndef CLEF_CLI_MPI_H
#define CLEF_CLI_MPI_H

#include <stddef.h>

#include "err.h"

// 1 when the environment says a launcher started this process
// (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE, SLURM_STEP_ID with
// SLURM_PROCID).
int cli_mpi_launched(void);
// 1 when this build has MPI support (CLEF_HAVE_MPI).
int cli_mpi_built(void);
// Joins MPI when launched (MPI_Init_thread, errors fatal). 0, or
// CLEF_ERR_INPUT with the message printed when this build has no MPI.
int cli_mpi_start(int *argc, char ***argv);
void cli_mpi_end(void);
// 1 after cli_mpi_start joined MPI (any size, 1 included).
int cli_mpi_on(void);
int cli_mpi_rank(void);       // 0 outside MPI
int cli_mpi_size(void);       // 1 outside MPI
int cli_mpi_local_rank(void); // among the ranks of this host (binding)
int cli_mpi_local_size(void); // the ranks on this host (1 outside MPI)

// ---- collectives over every rank (no-ops outside MPI) ----
// The largest / smallest / the sum of v over the ranks.
int cli_mpi_max(int v);
int cli_mpi_min(int v);
long cli_mpi_sum(long v);
void cli_mpi_bcast(void *buf, size_t bytes, int root);
void cli_mpi_barrier(void);
// all[r] = rank r's v (all: size doubles).
void cli_mpi_allgather_f64(double v, double *all);
// Rank r's bytes mine[0..counts[r]) to all + displs[r], on every rank.
void cli_mpi_allgatherv_bytes(const void *mine, void *all, const int *counts,
                              const int *displs);
// The same for floats (counts and displs in floats).
void cli_mpi_allgatherv_f32(const float *mine, float *all, const int *counts,
                            const int *displs);
// Rank r sends send + sdispls[j] (scounts[j] floats) to every rank j, and
// receives rank j's into recv + rdispls[j] (rcounts[j] floats).
void cli_mpi_alltoallv_f32(const float *send, const int *scounts,
                           const int *sdispls, float *recv, const int *rcounts,
                           const int *rdispls);

// Agreement on an error before anything else happens: rc of every rank;
// when one failed, every rank returns the code and message of the lowest
// failing rank in *err (the one message rank 0 prints).
int cli_mpi_agree(int rc, clef_err *err);

#endif

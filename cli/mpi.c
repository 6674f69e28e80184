// The MPI layer (cli/cli_mpi.h): Open MPI or any MPI-3 library, or, without
// CLEF_HAVE_MPI, one rank and a refusal of launchers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_mpi.h"

#ifdef CLEF_HAVE_MPI
#include <mpi.h>
#endif

static int on, rank, size = 1, local_rank, local_size = 1;

int cli_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                       "PMI_SIZE", "PMI_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return 1;
    return getenv("SLURM_STEP_ID") && getenv("SLURM_PROCID") &&
           getenv("SLURM_NTASKS") && atoi(getenv("SLURM_NTASKS")) > 1;
}

int cli_mpi_on(void)
{
    return on;
}
int cli_mpi_rank(void)
{
    return rank;
}
int cli_mpi_size(void)
{
    return size;
}
int cli_mpi_local_rank(void)
{
    return local_rank;
}
int cli_mpi_local_size(void)
{
    return local_size;
}

// Each collective below: its one-rank meaning when this process is not in
// MPI (always so in a build without it), else the MPI call.
#ifdef CLEF_HAVE_MPI
#define IN_MPI(call) (on ? ((call), 1) : 0)
#else
#define IN_MPI(call) ((void)0, 0)
#endif

int cli_mpi_built(void)
{
#ifdef CLEF_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int cli_mpi_start(int *argc, char ***argv)
{
    if (!cli_mpi_launched() || on)
        return 0;
#ifdef CLEF_HAVE_MPI
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    // a rank that fails a call, or loses a peer, ends the whole job
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node; // the ranks that share this host's memory
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    on = 1;
    return 0;
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "clef: started by an MPI launcher (mpirun, srun), but "
                    "this build has no MPI support: rebuild with Open MPI "
                    "(apt-get install libopenmpi-dev openmpi-bin; cmake "
                    "-DCLEF_MPI=ON), or run clef without the launcher\n");
    return CLEF_ERR_INPUT;
#endif
}

void cli_mpi_end(void)
{
    (void)IN_MPI(MPI_Finalize());
    on = 0;
}

#ifdef CLEF_HAVE_MPI
static int reduce_int(int v, MPI_Op op)
{
    int out = v;
    (void)IN_MPI(MPI_Allreduce(&v, &out, 1, MPI_INT, op, MPI_COMM_WORLD));
    return out;
}
#define REDUCE_INT(v, op) reduce_int(v, op)
#else
#define REDUCE_INT(v, op) (v)
#endif

int cli_mpi_max(int v)
{
    return REDUCE_INT(v, MPI_MAX);
}

int cli_mpi_min(int v)
{
    return REDUCE_INT(v, MPI_MIN);
}

long cli_mpi_sum(long v) // integers: exact in any order
{
    long out = v;
    (void)IN_MPI(MPI_Allreduce(&v, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    return out;
}

void cli_mpi_bcast(void *buf, size_t bytes, int root)
{
    (void)buf, (void)bytes, (void)root;
    (void)IN_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
}

void cli_mpi_barrier(void)
{
    (void)IN_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

void cli_mpi_allgather_f64(double v, double *all)
{
    if (!IN_MPI(MPI_Allgather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE,
                              MPI_COMM_WORLD)))
        all[0] = v;
}

void cli_mpi_allgatherv_bytes(const void *mine, void *all, const int *counts,
                              const int *displs)
{
    if (!IN_MPI(MPI_Allgatherv(mine, counts[rank], MPI_BYTE, all, counts,
                               displs, MPI_BYTE, MPI_COMM_WORLD)))
        memmove((char *)all + displs[0], mine, (size_t)counts[0]);
}

void cli_mpi_allgatherv_f32(const float *mine, float *all, const int *counts,
                            const int *displs)
{
    if (!IN_MPI(MPI_Allgatherv(mine, counts[rank], MPI_FLOAT, all, counts,
                               displs, MPI_FLOAT, MPI_COMM_WORLD)))
        memmove(all + displs[0], mine, (size_t)counts[0] * sizeof(float));
}

void cli_mpi_alltoallv_f32(const float *send, const int *scounts,
                           const int *sdispls, float *recv, const int *rcounts,
                           const int *rdispls)
{
    (void)rcounts;
    if (!IN_MPI(MPI_Alltoallv(send, scounts, sdispls, MPI_FLOAT, recv, rcounts,
                              rdispls, MPI_FLOAT, MPI_COMM_WORLD)))
        memmove(recv + rdispls[0], send + sdispls[0],
                (size_t)scounts[0] * sizeof(float));
}

int cli_mpi_agree(int rc, clef_err *err)
{
    if (!on)
        return rc;
    const int first = cli_mpi_min(rc ? rank : size);
    if (first == size)
        return 0;
    clef_err e = {0};
    if (rank == first)
        e = *err;
    cli_mpi_bcast(&e, sizeof(e), first);
    *err = e;
    return e.code ? e.code : CLEF_ERR_RUN;
}

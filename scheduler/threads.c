#include "threads.h"
#include "cpu/cpu.h"

#ifdef CLEF_HAVE_HWLOC // off in CLEF_MINIMAL builds (aarch64 cross)
#include <hwloc.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    long v = strtol(s, &end, 10); // OMP_NUM_THREADS may be a list: first value
    if (end == s || v < 1 || v > 4096)
        return 0;
    return (int)v;
}

#ifndef CLEF_HAVE_HWLOC
// Without hwloc: every processor OpenMP sees counts, and threads are not bound.
static int physical_cores(void)
{
    return omp_get_num_procs();
}
static void bind_threads(int n, int first)
{
    (void)n;
    (void)first;
}
#else
static int physical_cores(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return 1;
    int n = 1;
    if (hwloc_topology_load(topo) == 0) {
        int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        n = cores > 0 ? cores : 1;
    }
    hwloc_topology_destroy(topo);
    return n;
}
#endif

int clef_threads_resolve(int requested, const char **source)
{
    const char *src = "--threads";
    int n = requested > 0 ? requested : 0;
    if (!n && (n = env_count("CLEF_NUM_THREADS")))
        src = "CLEF_NUM_THREADS";
    if (!n && (n = env_count("OMP_NUM_THREADS")))
        src = "OMP_NUM_THREADS";
    if (!n) {
        n = physical_cores();
#ifdef CLEF_HAVE_HWLOC
        src = "hwloc physical cores";
#else
        src = "processors (no hwloc)";
#endif
    }
    if (source)
        *source = src;
    return n;
}

#ifdef CLEF_HAVE_HWLOC
// Binds OpenMP thread i of a team of n to physical core first + i.
static void bind_threads(int n, int first)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0)
        goto out;
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    if (cores < 1)
        goto out;
    int failed = 0;
#pragma omp parallel num_threads(n) reduction(+ : failed)
    {
        int i = omp_get_thread_num();
        hwloc_obj_t core =
            hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (first + i) % cores);
        if (!core ||
            hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_THREAD))
            failed++;
    }
    if (clef_verbose())
        fprintf(stderr,
                "clef: %d threads bound to physical cores %d.. of %d%s\n", n,
                first % cores, cores,
                failed ? " (binding refused for some threads)" : "");
out:
    hwloc_topology_destroy(topo);
}
#endif

int clef_threads_setup(int requested)
{
    return clef_threads_setup_at(requested, 0);
}

int clef_threads_setup_at(int requested, int first_core)
{
    const char *src;
    int n = clef_threads_resolve(requested, &src);
    omp_set_num_threads(n);
    if (clef_verbose())
        fprintf(stderr, "clef: threads %d (from %s)\n", n, src);
    // honoured, but said: every barrier then waits on a descheduled thread
    int pus = clef_cpu_get()->pus;
    if (pus > 0 && n > pus)
        fprintf(stderr,
                "clef: %d threads (from %s) on %d hardware threads: "
                "oversubscribed, slower; results are the same\n",
                n, src, pus);
    bind_threads(n, first_core);
    return n;
}

// --backend and --threads through the backend registry.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scheduler/registry.h"
#include "scheduler/threads.h"
#include "scheduler/tune.h"

// `auto`: per op and shape class, the tuning file's choice or the built-in
// preference order (scheduler/tune.h).
static int auto_kernels(clef_kernels *out, clef_err *err)
{
    if (clef_auto_kernels(out, NULL, NULL) != 0)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "auto: no backend can run on this machine");
    return 0;
}

int cli_kernels(const char *name, clef_kernels *out, clef_err *err)
{
    if (!strcmp(name, "auto"))
        return auto_kernels(out, err);
    const clef_backend *b = clef_backend_find(name);
    if (!b)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "unknown backend \"%s\" (see clef --version)",
                              name);
    const char *why = clef_backend_unavailable(b);
    if (why)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "backend \"%s\" cannot run here: %s", name, why);
    if (clef_kernels_first_missing(b->table) != CLEF_OP_COUNT)
        return clef_err_input(
            err, NULL, NULL, "--backend",
            "backend \"%s\" lacks op %s in this build", name,
            clef_op_names[clef_kernels_first_missing(b->table)]);
    *out = *b->table;
    return 0;
}

// The count in use on this thread, set by cli_set_threads (0: not yet), and
// the first core its team binds to (a sweep's workers each have their own).
static _Thread_local int threads_in_use, first_core;

void cli_set_first_core(int core)
{
    first_core = core;
}

void cli_set_threads(int n)
{
    threads_in_use = clef_threads_setup_at(n, first_core);
}

int cli_threads(void)
{
    return threads_in_use ? threads_in_use : clef_threads_resolve(0, NULL);
}

void cli_print_backends(void)
{
    printf("kernels:");
    for (int i = 0; i < clef_backend_count(); i++) {
        const clef_backend *b = clef_backend_at(i);
        const char *why = clef_backend_unavailable(b);
        if (why)
            printf(" %s (%s)", b->name, why);
        else
            printf(" %s", b->name);
    }
    printf("\n");
}

int cli_memory_attention(clef_ws *ws, clef_err *err)
{
    const char *v = getenv("CLEF_MEMORY_ATTENTION");
    if (!v || !*v || clef_ws_set_memory_attention(ws, v) == 0)
        return 0;
    return clef_err_input(err, NULL, NULL, "CLEF_MEMORY_ATTENTION",
                          "is \"%s\", expected auto, project or absorb", v);
}

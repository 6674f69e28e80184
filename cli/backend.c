// --backend and --threads through the backend registry.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cli.h"
#include "registry.h"

int cli_kernels(const char *name, const clef_kernels **k, clef_err *err)
{
    const clef_backend *b = clef_backend_find(name);
    // `auto` until the registry names one: the scalar reference.
    if (!b && !strcmp(name, "auto"))
        b = clef_backend_find("scalar");
    if (!b)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "unknown backend \"%s\" (see clef --version)",
                              name);
    const char *why = clef_backend_unavailable(b);
    if (why)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "backend \"%s\" cannot run here: %s", name, why);
    if (clef_kernels_first_missing(b->table) != CLEF_OP_COUNT)
        return clef_err_input(err, NULL, NULL, "--backend",
                              "backend \"%s\" lacks op %s in this build", name,
                              clef_op_names[clef_kernels_first_missing(
                                  b->table)]);
    *k = b->table;
    return 0;
}

void cli_set_threads(int n)
{
    if (n <= 0) {
        const char *s = getenv("CLEF_NUM_THREADS");
        n = s ? atoi(s) : 0;
    }
    if (n > 0)
        omp_set_num_threads(n);
}

int cli_threads(void)
{
    return omp_get_max_threads();
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

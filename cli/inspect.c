// clef inspect FILE.safetensors: names, dtypes, shapes, metadata, counts.
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "safetensors.h"

static const char *help =
    "usage: clef inspect FILE.safetensors\n"
    "\n"
    "Prints every tensor (name, dtype, shape, elements), the __metadata__\n"
    "pairs and the parameter count: every element, and for head weights and\n"
    "checkpoints the head's own parameters (adamw.m/ and adamw.v/ left out).\n";

static const char *dt_name(clef_dtype dt)
{
    static const char *names[] = {"F32", "F16", "BF16", "F64", "I32", "I64"};
    return (unsigned)dt < 6 ? names[dt] : "?";
}

int cli_inspect(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(help, stdout);
        return 0;
    }
    clef_err err = {0};
    if (argc != 1 || argv[0][0] == '-') {
        clef_err_input(&err, NULL, NULL, NULL,
                       "expects exactly one FILE.safetensors");
        fputs(help, stderr);
        return cli_fail("inspect", &err);
    }
    clef_st_file f;
    if (clef_st_open(argv[0], &f, &err))
        return cli_fail("inspect", &err);
    printf("file: %s (%zu bytes, header %zu bytes)\n", argv[0], f.size,
           f.data_start - 8);
    size_t total = 0, head = 0;
    for (int i = 0; i < f.ntensors; i++) {
        const clef_st_tensor *t = &f.tensors[i];
        char shape[160] = "";
        size_t n = 0;
        for (int j = 0; j < t->ndim && n < sizeof(shape); j++)
            n += snprintf(shape + n, sizeof(shape) - n, "%s%lld", j ? ", " : "",
                          (long long)t->shape[j]);
        printf("  %-56s %-4s [%s] %zu\n", t->name, dt_name(t->dtype), shape,
               t->numel);
        total += t->numel;
        if (strncmp(t->name, "adamw.", 6) != 0)
            head += t->numel;
    }
    printf("metadata:%s\n", f.nmeta ? "" : " (none)");
    for (int i = 0; i < f.nmeta; i++)
        printf("  %s: %s\n", f.meta[i].key, f.meta[i].value);
    printf("tensors: %d\n", f.ntensors);
    printf("elements: %zu\n", total);
    printf("parameters: %zu%s\n", head,
           head != total ? " (without adamw.m/ and adamw.v/)" : "");
    clef_st_close(&f);
    return 0;
}

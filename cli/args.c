// Flag parsing: --name VALUE and --name=VALUE, strict numbers.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"

int cli_flag(int argc, char **argv, int *i, const char *name, int has_value,
             const char **val, clef_err *err)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '\0') {
        if (!has_value)
            return 1;
        if (*i + 1 >= argc) {
            clef_err_input(err, NULL, NULL, name, "needs a value");
            return -1;
        }
        *val = argv[++*i];
        return 1;
    }
    if (a[n] == '=' && has_value) {
        *val = a + n + 1;
        return 1;
    }
    return 0;
}

int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out,
                   clef_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!s[0] || *end || errno)
        return clef_err_input(err, NULL, NULL, flag, "\"%s\" is not an integer",
                              s);
    if (v < lo || v > hi)
        return clef_err_input(err, NULL, NULL, flag,
                              "%ld is out of range [%ld, %ld]", v, lo, hi);
    *out = v;
    return 0;
}

int cli_parse_int(const char *flag, const char *s, long lo, long hi, int *out,
                  clef_err *err)
{
    long v;
    int rc = cli_parse_long(flag, s, lo, hi, &v, err);
    if (!rc)
        *out = (int)v;
    return rc;
}

int cli_parse_u64(const char *flag, const char *s, uint64_t max, uint64_t *out,
                  clef_err *err)
{
    // digits only: strtoull itself would skip blanks and negate "-1"
    int digits = s[0] != '\0';
    for (const char *c = s; *c; c++)
        digits &= *c >= '0' && *c <= '9';
    if (!digits)
        return clef_err_input(err, NULL, NULL, flag,
                              "\"%s\" is not a non-negative decimal "
                              "integer",
                              s);
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno || v > max)
        return clef_err_input(err, NULL, NULL, flag,
                              "\"%s\" is out of range [0, %llu]", s,
                              (unsigned long long)max);
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_double(const char *flag, const char *s, double lo, double hi,
                     double *out, clef_err *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!s[0] || *end || errno || !isfinite(v))
        return clef_err_input(err, NULL, NULL, flag,
                              "\"%s\" is not a finite number", s);
    if (v < lo || v > hi)
        return clef_err_input(err, NULL, NULL, flag,
                              "%g is out of range [%g, %g]", v, lo, hi);
    *out = v;
    return 0;
}

int cli_parse_choice(const char *flag, const char *s, const char *a,
                     const char *b, int *is_b, clef_err *err)
{
    if (strcmp(s, a) && strcmp(s, b))
        return clef_err_input(err, NULL, NULL, flag, "\"%s\" is not %s or %s",
                              s, a, b);
    *is_b = !strcmp(s, b);
    return 0;
}

int cli_parse_pair(const char *flag, const char *s, double lo, double hi,
                   double *a, double *b, clef_err *err)
{
    const char *comma = strchr(s, ',');
    if (!comma || strchr(comma + 1, ','))
        return clef_err_input(err, NULL, NULL, flag,
                              "\"%s\" is not two numbers B1,B2", s);
    char first[64];
    size_t n = (size_t)(comma - s);
    if (n >= sizeof(first))
        return clef_err_input(err, NULL, NULL, flag, "value too long");
    memcpy(first, s, n);
    first[n] = '\0';
    int rc = cli_parse_double(flag, first, lo, hi, a, err);
    if (!rc)
        rc = cli_parse_double(flag, comma + 1, lo, hi, b, err);
    return rc;
}

int cli_fail(const char *cmd, const clef_err *err)
{
    if (cli_mpi_rank() == 0) // under MPI: one message, from rank 0
        fprintf(stderr, "clef %s: %s\n", cmd, err->msg);
    return err->code ? err->code : CLEF_ERR_RUN;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

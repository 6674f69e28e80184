#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int clef_err_set(clef_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

int clef_err_input(clef_err *err, const char *file, const char *record,
                   const char *field, const char *fmt, ...)
{
    if (!err)
        return CLEF_ERR_INPUT;
    char rule[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    size_t n = 0;
    err->msg[0] = '\0';
    if (file)
        n += snprintf(err->msg + n, sizeof(err->msg) - n, "%s: ", file);
    if (record && n < sizeof(err->msg))
        n +=
            snprintf(err->msg + n, sizeof(err->msg) - n, "record %s: ", record);
    if (field && n < sizeof(err->msg))
        n += snprintf(err->msg + n, sizeof(err->msg) - n, "field %s: ", field);
    if (n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - n, "%s", rule);
    err->code = CLEF_ERR_INPUT;
    return CLEF_ERR_INPUT;
}

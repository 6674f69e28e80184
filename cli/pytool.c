// clef capture / clef report: the commands written in Python. The clef
// binary replaces itself (execv) with the interpreter on the command's
// script; the script's exit code is the command's.
//
// Interpreter: $CLEF_PYTHON, else /usr/bin/python3.
// Scripts: $CLEF_PYTHON_DIR, else the source tree's python/ folder
// (CLEF_PYTHON_SRC_DIR, set by CMake).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#ifndef CLEF_PYTHON_SRC_DIR
#define CLEF_PYTHON_SRC_DIR "python"
#endif

static int run_script(const char *cmd, const char *script, int argc,
                      char **argv)
{
    const char *py = getenv("CLEF_PYTHON");
    if (!py || !*py)
        py = "/usr/bin/python3";
    const char *dir = getenv("CLEF_PYTHON_DIR");
    if (!dir || !*dir)
        dir = CLEF_PYTHON_SRC_DIR;

    struct stat st;
    if (stat(py, &st) != 0 || !S_ISREG(st.st_mode) || access(py, X_OK) != 0) {
        fprintf(stderr,
                "clef %s: the Python interpreter %s is missing or not "
                "executable (install python3, or set CLEF_PYTHON)\n",
                cmd, py);
        return CLEF_ERR_INPUT;
    }
    size_t n = strlen(dir) + strlen(script) + 2;
    char *path = malloc(n);
    if (!path) {
        fprintf(stderr, "clef %s: out of memory\n", cmd);
        return CLEF_ERR_RUN;
    }
    snprintf(path, n, "%s/%s", dir, script);
    errno = 0;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr,
                "clef %s: the script %s is missing (%s; set CLEF_PYTHON_DIR "
                "to the folder holding %s)\n",
                cmd, path, errno ? strerror(errno) : "not a regular file",
                script);
        free(path);
        return CLEF_ERR_INPUT;
    }
    char **av = calloc((size_t)argc + 3, sizeof(*av));
    if (!av) {
        free(path);
        fprintf(stderr, "clef %s: out of memory\n", cmd);
        return CLEF_ERR_RUN;
    }
    av[0] = (char *)py;
    av[1] = path;
    for (int i = 0; i < argc; i++)
        av[i + 2] = argv[i];
    av[argc + 2] = NULL;
    fflush(stdout);
    fflush(stderr);
    execv(py, av);
    fprintf(stderr, "clef %s: cannot run %s %s: %s\n", cmd, py, path,
            strerror(errno));
    free(av);
    free(path);
    return CLEF_ERR_INPUT;
}

int cli_capture(int argc, char **argv)
{
    return run_script("capture", "clef_capture.py", argc, argv);
}

int cli_report(int argc, char **argv)
{
    return run_script("report", "clef_report.py", argc, argv);
}

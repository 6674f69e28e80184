// Reading input files: once, regular files only, with a size bound.
#define _XOPEN_SOURCE 700 // realpath
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t clef_phys_mem_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)page;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

// Reads exactly n bytes (the size fstat gave), then checks for end of file.
static int read_exact(int fd, const char *path, uint8_t *buf, size_t n,
                      clef_err *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return clef_err_input(err, path, NULL, NULL, "read error: %s",
                                  strerror(errno));
        if (r == 0)
            return clef_err_input(err, path, NULL, NULL,
                                  "the file shrank while it was read (%zu "
                                  "of %zu bytes)",
                                  got, n);
        got += (size_t)r;
    }
    uint8_t extra;
    ssize_t r;
    while ((r = read(fd, &extra, 1)) < 0 && errno == EINTR)
        ;
    if (r != 0)
        return clef_err_input(err, path, NULL, NULL,
                              "the file grew while it was read (past %zu "
                              "bytes)",
                              n);
    return 0;
}

int clef_file_read(const char *path, uint64_t limit, uint8_t **bytes,
                   size_t *size, clef_err *err)
{
    *bytes = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return clef_err_input(err, path, NULL, NULL, "cannot open: %s",
                              strerror(errno));
    int rc = 0;
    uint8_t *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = clef_err_input(err, path, NULL, NULL, "cannot stat: %s",
                            strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = clef_err_input(err, path, NULL, NULL,
                            "is %s: only regular files are read",
                            kind_of(st.st_mode));
        goto out;
    }
    uint64_t phys = clef_phys_mem_bytes();
    if (limit == 0 || (phys && limit > phys))
        limit = phys ? phys : (uint64_t)SIZE_MAX;
    if ((uint64_t)st.st_size > limit) {
        rc = clef_err_input(err, path, NULL, NULL,
                            "is %" PRIu64 " bytes, over the limit of %" PRIu64
                            " bytes for this file",
                            (uint64_t)st.st_size, limit);
        goto out;
    }
    size_t n = (size_t)st.st_size;
    if (!(buf = malloc(n ? n : 1))) {
        rc = clef_err_set(err, CLEF_ERR_RUN,
                          "%s: out of memory reading %zu bytes", path, n);
        goto out;
    }
    if ((rc = read_exact(fd, path, buf, n, err)))
        goto out;
    *bytes = buf;
    *size = n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

int clef_path_inside(const char *dir, const char *path)
{
    char rd[PATH_MAX], rp[PATH_MAX];
    if (!realpath(dir, rd) || !realpath(path, rp))
        return -1;
    size_t n = strlen(rd);
    if (n == 1 && rd[0] == '/')
        return rp[0] == '/' && rp[1] != '\0';
    return !strncmp(rp, rd, n) && rp[n] == '/' && rp[n + 1] != '\0';
}

// Small file-system helpers: run-dir checks, mkdir -p, atomic JSON writes.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cpu/clock.h"

int cli_dir_absent_or_empty(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT;
    if (!S_ISDIR(st.st_mode))
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

int cli_mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        buf[i] = c;
    }
    return 0;
}

int cli_parent_writable(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        return access(".", W_OK) == 0;
    if (slash == buf)
        slash[1] = '\0';
    else
        *slash = '\0';
    return access(buf, W_OK) == 0;
}

int cli_write_json(const char *path, json_t *v, size_t flags, clef_err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    char *s = json_dumps(v, flags);
    if (!s)
        return clef_err_set(err, CLEF_ERR_RUN, "%s: cannot serialise JSON",
                            path);
    int rc = 0;
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: cannot write: %s", tmp,
                          strerror(errno));
        goto done;
    }
    size_t n = strlen(s);
    int bad = fwrite(s, 1, n, fp) != n || fputc('\n', fp) == EOF ||
              fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    if (fclose(fp) != 0)
        bad = 1;
    if (bad || rename(tmp, path) != 0) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: cannot write: %s", path,
                          strerror(errno));
        unlink(tmp);
    }
done:
    free(s);
    return rc;
}

void cli_dirname(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/')
        out[--len] = '\0';
    char *s = strrchr(out, '/');
    if (!s)
        snprintf(out, n, ".");
    else if (s == out)
        s[1] = '\0';
    else
        *s = '\0';
}

double cli_now(void)
{
    return clef_now_s();
}

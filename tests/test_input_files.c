// Suite input_files: every input is opened once, must be a regular file of
// bounded size inside its package, and sizes read from files are bounded
// (issue 16, defects 6, 7, 8, 9). Each refusal is exit 2 with a message
// naming the file and the rule, and nothing written.
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util_package.h"

// Runs `clef ARGS` under a 2 GiB address-space limit (an unbounded read
// fails instead of filling the machine) with a 20 s alarm (a blocking open
// fails instead of hanging the suite). Returns the exit code, or -1.
// Under AddressSanitizer (CLEF_SANITIZE) an address-space limit stops ASan
// from reserving its shadow memory, so ASan's allocator bounds the program
// instead: no single allocation over 2 GiB (it returns NULL, as malloc
// would under the limit), and the process dies past 3 GiB resident.
#ifdef CLEF_SANITIZE
#define CLEF_BOUND                                                             \
    "export ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}"                    \
    "allocator_may_return_null=1:max_allocation_size_mb=2048:"                 \
    "hard_rss_limit_mb=3072\"; "
#else
#define CLEF_BOUND "ulimit -v 2097152; "
#endif
static int clef_bounded(const char *dir, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             CLEF_BOUND "exec timeout 20 %s/clef "
                        "%s >%s/out 2>%s/err",
             CLEF_BIN_DIR, args, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_refused(const char *dir, const char *args, const char *what)
{
    int rc = clef_bounded(dir, args);
    cr_expect_eq(rc, 2, "%s: exit %d (124: it hung)", args, rc);
    cr_expect(strstr(tp_err(dir), what), "%s: stderr \"%s\" lacks \"%s\"", args,
              tp_err(dir), what);
}

// A FIFO blocked the open forever; /dev/zero grew memory without bound.
Test(input_files, only_regular_files_are_read, .timeout = 120)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    char *fifo = tp_path(dir, "fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char args[3000];
    const char *inputs[][2] = {
        {"validate --package %s", "FIFO"},
        {"validate --package %s/.", "directory"},
        {"validate --package /dev/zero%s", "character device"},
        {"inspect %s", "FIFO"},
        {"inspect /dev/zero%s", "character device"},
    };
    for (int i = 0; i < 5; i++) {
        const char *arg = i == 2 || i == 4 ? "" : i == 1 ? pkg : fifo;
        snprintf(args, sizeof(args), inputs[i][0], arg);
        expect_refused(dir, args, inputs[i][1]);
    }
    snprintf(args, sizeof(args),
             "score --weights %s --package "
             "%s/package.json",
             fifo, pkg);
    expect_refused(dir, args, "FIFO");
    snprintf(args, sizeof(args),
             "train --package %s/package.json --run-dir "
             "%s/run --init /dev/zero",
             pkg, dir);
    expect_refused(dir, args, "/dev/zero");
    cr_expect(!tp_exists(tp_path(dir, "run")));
    // a shard replaced by a FIFO inside the package folder
    char *shard = tp_path(pkg, "records-000.safetensors");
    cr_assert_eq(unlink(shard), 0);
    cr_assert_eq(mkfifo(shard, 0600), 0);
    snprintf(args, sizeof(args), "validate --package %s/package.json", pkg);
    expect_refused(dir, args, "FIFO");
    tp_rmdir(dir);
}

// The name check was textual: a symlink inside the package could lead
// anywhere (a copy of the real shard outside, /dev/zero). Links that stay
// inside the folder are fine.
Test(input_files, symlinks_must_stay_inside_the_package, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    char *shard = tp_path(pkg, "records-000.safetensors");
    char *outside = tp_path(dir, "outside.safetensors");
    cr_assert_eq(rename(shard, outside), 0);
    cr_assert_eq(symlink(outside, shard), 0);
    char args[3000];
    snprintf(args, sizeof(args), "validate --package %s/package.json", pkg);
    expect_refused(dir, args, "outside the package folder");
    cr_expect(strstr(tp_err(dir), "shards[0].file"), "%s", tp_err(dir));
    // inside: a link to another name in the folder (relative and absolute)
    cr_assert_eq(unlink(shard), 0);
    char *inside = tp_path(pkg, "real.safetensors");
    cr_assert_eq(rename(outside, inside), 0);
    cr_assert_eq(symlink("real.safetensors", shard), 0);
    cr_expect_eq(clef_bounded(dir, args), 0, "%s", tp_err(dir));
    cr_assert_eq(unlink(shard), 0);
    cr_assert_eq(symlink(inside, shard), 0);
    cr_expect_eq(clef_bounded(dir, args), 0, "%s", tp_err(dir));
    // /dev/zero behind a link
    cr_assert_eq(unlink(shard), 0);
    cr_assert_eq(symlink("/dev/zero", shard), 0);
    expect_refused(dir, args, "outside the package folder");
    tp_rmdir(dir);
}

// Each file was read twice (hash, then parse): a file swapped in between was
// parsed unchecked. Counted with inotify: `clef validate` opens each file of
// the package exactly once.
Test(input_files, each_package_file_is_opened_once, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    const char *files[] = {"package.json", "lexical.safetensors",
                           "init.safetensors", "records-000.safetensors"};
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        cr_skip_test("inotify unavailable: %s", strerror(errno));
    int wd[4];
    for (int i = 0; i < 4; i++) {
        wd[i] = inotify_add_watch(fd, tp_path(pkg, files[i]), IN_OPEN);
        cr_assert_geq(wd[i], 0, "%s: %s", files[i], strerror(errno));
    }
    char args[3000];
    snprintf(args, sizeof(args), "validate --package %s/package.json", pkg);
    cr_assert_eq(clef_bounded(dir, args), 0, "%s", tp_err(dir));
    int opens[4] = {0, 0, 0, 0};
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            for (int i = 0; i < 4; i++)
                if (e->wd == wd[i] && (e->mask & IN_OPEN))
                    opens[i]++;
            p += sizeof(*e) + e->len;
        }
    close(fd);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(opens[i], 1, "%s opened %d times", files[i], opens[i]);
    tp_rmdir(dir);
}

// The metadata's head overrides the shapes: set one size in a weights file.
static const char *g_key;
static long long g_value;
static void set_head_size(json_t *hdr)
{
    json_t *meta = json_object_get(hdr, "__metadata__");
    json_error_t je;
    json_t *head =
        json_loads(json_string_value(json_object_get(meta, "head")), 0, &je);
    cr_assert_not_null(head);
    json_object_set_new(head, g_key, json_integer(g_value));
    char *s = json_dumps(head, JSON_COMPACT);
    json_object_set_new(meta, "head", json_string(s));
    free(s);
    json_decref(head);
}

// Width 1780576565 overflowed the layout arithmetic (UBSan: pointer
// overflow in core/params.c); width 16777216 was an allocation failure, exit
// 1. Both are impossible sizes: exit 2 naming the file and "head".
Test(input_files, impossible_head_sizes_exit_2, .timeout = 60)
{
    char *dir = tp_tmpdir();
    char *pkg = tp_fixture_in(dir);
    const struct {
        const char *key;
        long long v;
    } cases[] = {{"width", 1780576565},
                 {"width", 16777216},
                 {"hidden_size", 2147483647},
                 {"feedforward", 65537},
                 {"layers", 1000}};
    char args[3000], *w = tp_path(dir, "w.safetensors");
    for (int i = 0; i < 5; i++) {
        char cmd[2400];
        snprintf(cmd, sizeof(cmd), "cp %s/init.safetensors %s", pkg, w);
        cr_assert_eq(system(cmd), 0);
        g_key = cases[i].key;
        g_value = cases[i].v;
        cr_assert_eq(tp_st_edit_header(w, set_head_size), 0);
        snprintf(args, sizeof(args),
                 "score --weights %s --package "
                 "%s/package.json",
                 w, pkg);
        expect_refused(dir, args, "head");
        cr_expect(strstr(tp_err(dir), "w.safetensors"), "%s", tp_err(dir));
        snprintf(args, sizeof(args),
                 "train --package %s/package.json "
                 "--run-dir %s/run --init %s",
                 pkg, dir, w);
        expect_refused(dir, args, "head");
        cr_expect(!tp_exists(tp_path(dir, "run")));
    }
    // the manifest's head: a width the machine cannot hold
    json_t *m = tp_manifest_load(pkg);
    cr_assert_not_null(m);
    json_t *head = json_object_get(m, "head");
    json_object_set_new(head, "width", json_integer(16777216));
    json_object_set_new(head, "hidden_size", json_integer(16777216));
    cr_assert_eq(tp_manifest_save(pkg, m), 0);
    json_decref(m);
    snprintf(args, sizeof(args), "validate --package %s/package.json", pkg);
    expect_refused(dir, args, "head");
    tp_rmdir(dir);
}

// Test helpers for packages and the clef binary (suites package, cli,
// python): temp folders, running clef, raw safetensors writing and editing,
// manifest hashes, a mixed-geometry package.
#ifndef CLEF_TEST_UTIL_PACKAGE_H
#define CLEF_TEST_UTIL_PACKAGE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

// A fresh folder under /tmp (malloc'd path).
char *tp_tmpdir(void);
// Removes a folder made by tp_tmpdir (and frees dir). A failing test skips
// it and leaves the folder for inspection.
void tp_rmdir(char *dir);
// Runs `CLEF_BIN_DIR/clef ARGS` with stdout -> DIR/out, stderr -> DIR/err.
// Returns the exit code, or -1.
int tp_clef(const char *dir, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The stderr of the last tp_clef run in dir (a static buffer, for messages).
const char *tp_err(const char *dir);
// Whole file, NUL-terminated (size without the NUL in *n if n). NULL on error.
char *tp_slurp(const char *path, size_t *n);
int tp_write(const char *path, const void *bytes, size_t n);
int tp_exists(const char *path);
// 1 when both files can be read and hold the same bytes.
int tp_same_file(const char *a, const char *b);
// The parsed JSON of path (asserts it parses).
json_t *tp_load_json(const char *path);

// One tensor for tp_st_write: dtype "F32", "F16", "BF16", "I32", ...
typedef struct tp_tensor {
    const char *name, *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;
    size_t nbytes;
} tp_tensor;
// Writes a safetensors file by hand (header JSON, then the data in order).
int tp_st_write(const char *path, const tp_tensor *t, int n);
// Absolute byte range of tensor `name` inside file bytes. 0 or -1.
int tp_st_locate(const uint8_t *bytes, size_t n, const char *name,
                 size_t *begin, size_t *end);
// Loads the header JSON of a file, lets edit() change it, writes it back
// with the same data section. 0 or -1.
int tp_st_edit_header(const char *path, void (*edit)(json_t *hdr));

// Recomputes the sha256 of every file entry of the manifest in dir and
// writes dir/package.json. 0 or -1.
int tp_manifest_save(const char *dir, json_t *manifest);
json_t *tp_manifest_load(const char *dir);

// float -> F16 / BF16 bits (round to nearest even), for test data.
uint16_t tp_f32_to_f16(float f);
uint16_t tp_f32_to_bf16(float f);

// Writes into dir a package of 6 records of mixed geometry (T 5..12, Q 1..3,
// 1..4 options, noul/choice/score questions, label and soft targets), one
// train record's hidden states F16 and another's BF16, two shards, a
// validation and a test record. head: d 8, w 8, h 2, f 16, R 1, L 1.
int tp_write_mixed_package(const char *dir);

#endif

// ---- the catalogue of broken packages (one per rule of FORMATS.md) ----
// Each case turns a copy of the default fixture into a package that breaks
// exactly one rule; the loader's message must contain every expect[] string
// (file, record, field, rule).
typedef struct tp_broken {
    const char *name;
    int (*make)(const char *dir); // edits the package in dir; 0 or -1
    const char *pin;              // --package-sha256 to pass, or NULL
    const char *expect[4];
} tp_broken;
extern const tp_broken tp_broken_cases[];
extern const int tp_nbroken;
// Writes the default fixture (clef fixture) into dir. 0 or -1.
int tp_fixture(const char *dir);
// "dir/name" in a per-process pool (each Criterion test is its own
// process): nothing to free. Asserts on overflow.
char *tp_path(const char *dir, const char *name);
// The default fixture written into dir/pkg (asserts it worked): its path.
char *tp_fixture_in(const char *dir);
// Copies folder src to dst (cp -R). 0 or -1.
int tp_copy_dir(const char *src, const char *dst);

// Shared helpers of the libFuzzer harnesses (tests/fuzz/README.md): a
// per-process temp folder, files, an in-memory safetensors writer, the tiny
// head and package the seeds and the package harness's defaults are made of,
// and the package harness's multi-file input format.
#ifndef CLEF_FUZZ_COMMON_H
#define CLEF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "head.h"

// A growable byte buffer.
typedef struct fz_buf {
    uint8_t *p;
    size_t n, cap;
} fz_buf;
void fz_buf_put(fz_buf *b, const void *src, size_t n);
void fz_buf_puts(fz_buf *b, const char *s);
void fz_buf_printf(fz_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void fz_buf_free(fz_buf *b);

// The process's temp folder: $CLEF_FUZZ_TMPDIR, else /dev/shm (a tmpfs) when
// writable, else $TMPDIR, else /tmp; a fresh clef-fuzz-XXXXXX folder inside,
// made on first use. Aborts when none can be made.
const char *fz_tmpdir(void);
// Removes the temp folder and its files (the next fz_tmpdir makes a new
// one). The harnesses call it after every input: libFuzzer leaves with
// _Exit, so nothing registered with atexit would run.
void fz_release_tmpdir(void);
// out = fz_tmpdir()/name (a static-sized buffer of 4096 is enough).
void fz_path(char out[4096], const char *name);
// Writes n bytes to path (truncating). 0 or -1.
int fz_write(const char *path, const void *bytes, size_t n);
// Whole file into *out (malloc'd). 0 or -1.
int fz_read(const char *path, fz_buf *out);
// 1 when $CLEF_FUZZ_VERBOSE is 1: the harnesses then print each loader's
// result (to check seeds: HARNESS -runs=0 DIR).
int fz_verbose(void);
// Removes every file in the temp folder (not the folder itself).
void fz_clean_tmpdir(void);

// One tensor for fz_st_build: dtype "F32", "F16", "I32", ... (any string).
typedef struct fz_tensor {
    const char *name, *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;
    size_t nbytes;
} fz_tensor;
// A safetensors file in memory: header (with "__metadata__" = meta_json, an
// object text, when non-NULL), padded to 8 bytes, then the data in order.
void fz_st_build(fz_buf *out, const fz_tensor *t, int n, const char *meta_json);

// The tiny head of the seeds: hidden 4, width 4, heads 2, feedforward 8,
// routing_layers 1, layers 1.
extern const clef_config fz_tiny_cfg;
// Allocates the tiny head with seeded random parameters (and, for
// checkpoints, non-zero moments and step 3). 0 or -1.
int fz_tiny_head(clef_head *hd, int moments);
// The bytes of the tiny head saved by clef_weights_save (checkpoint 0) or
// clef_checkpoint_save (1). 0 or -1.
int fz_tiny_weights_file(fz_buf *out, int checkpoint);

// ---- the package harness's input: parts separated by FZ_SEP ----
// part 0: package.json; 1: lexical.safetensors; 2: records-000.safetensors;
// 3: records-001.safetensors; 4: init.safetensors. A part the input does not
// have is the tiny package's valid file. In the manifest every
// "%SHA:NAME%" (NAME of [A-Za-z0-9._-]) becomes the SHA-256 of the folder's
// file NAME (64 zeros when it does not exist), so mutated files still pass
// the digest check and reach the parsers.
#define FZ_SEP "\n=clef-fuzz-part=\n"
#define FZ_NPARTS 5
extern const char *const fz_part_names[FZ_NPARTS];
// Splits data into at most FZ_NPARTS parts (the rest of the input stays in
// the last one). Returns the number of parts (>= 1).
int fz_split(const uint8_t *data, size_t n, const uint8_t *part[FZ_NPARTS],
             size_t len[FZ_NPARTS]);
// The tiny package's files (parts 0..4; the manifest with placeholders and
// an initial_weights entry when with_init). 0 or -1.
int fz_tiny_package(fz_buf parts[FZ_NPARTS], int with_init);
// Replaces the %SHA:NAME% placeholders of manifest (files of dir). 0 or -1.
int fz_subst_sha(const uint8_t *m, size_t n, const char *dir, fz_buf *out);

#endif

// safetensors read and write (FORMATS.md): 8-byte LE header length N, N bytes
// of JSON, then the data. Reads F32, F16, BF16, F64, I32, I64; writes F32,
// BF16 (bit patterns as uint16_t), I32.
#ifndef CLEF_SAFETENSORS_H
#define CLEF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"

typedef enum clef_dtype {
    CLEF_DT_F32,
    CLEF_DT_F16,
    CLEF_DT_BF16,
    CLEF_DT_F64,
    CLEF_DT_I32,
    CLEF_DT_I64,
} clef_dtype;

#define CLEF_ST_MAX_DIMS 8

typedef struct clef_st_tensor {
    char *name;
    clef_dtype dtype;
    int ndim; // 0 for a scalar (shape [])
    int64_t shape[CLEF_ST_MAX_DIMS];
    size_t numel;
    size_t begin, end; // byte offsets relative to the data section
} clef_st_tensor;

typedef struct clef_st_meta {
    const char *key, *value; // owned (freed) when read from a file
} clef_st_meta;

typedef struct clef_st_file {
    char *path;
    uint8_t *bytes; // the whole file
    size_t size;
    size_t data_start; // 8 + N
    int ntensors;
    clef_st_tensor *tensors; // in header order
    int nmeta;
    clef_st_meta *meta; // __metadata__ entries
    int *by_name; // internal: tensor indices sorted by name (clef_st_find)
} clef_st_file;

// Opens and validates a file: header length within the file and <= 100 MB,
// valid JSON, known dtypes, sizes = dtype × shape, offsets inside the data
// section, no overlap, no duplicate names. Errors name the file and tensor.
// The file is read once, as a regular file bounded by the physical memory
// (file.h): a FIFO, a device or a directory is refused.
int clef_st_open(const char *path, clef_st_file *f, clef_err *err);
// The same, and the SHA-256 of the bytes read must equal sha256 (hex; NULL:
// unchecked): the bytes parsed are the bytes hashed. field names the digest
// in errors ("shards[0].sha256").
int clef_st_open_pinned(const char *path, const char *sha256, const char *field,
                        clef_st_file *f, clef_err *err);
void clef_st_close(clef_st_file *f);
const clef_st_tensor *clef_st_find(const clef_st_file *f, const char *name);
const char *clef_st_meta_get(const clef_st_file *f, const char *key);

// Converts a float tensor (F32/F16/BF16/F64) to float32 into out (numel).
// Fails (naming file and tensor) on a non-float dtype or, if require_finite,
// on a NaN or Inf.
int clef_st_read_f32(const clef_st_file *f, const clef_st_tensor *t, float *out,
                     int require_finite, clef_err *err);
// Converts an integer tensor (I32/I64) to int32 (values must fit).
int clef_st_read_i32(const clef_st_file *f, const clef_st_tensor *t,
                     int32_t *out, clef_err *err);

// One tensor to write: F32, BF16 or I32 data, shape as given (ndim 0 =
// scalar).
typedef struct clef_st_entry {
    const char *name;
    clef_dtype dtype; // CLEF_DT_F32, CLEF_DT_BF16 or CLEF_DT_I32
    int ndim;
    int64_t shape[CLEF_ST_MAX_DIMS];
    const void *data;
} clef_st_entry;

// Writes atomically: PATH.tmp.<pid>, fwrite, fflush, fsync, rename, fsync of
// the folder. meta: nmeta key/value pairs for __metadata__ (may be 0).
int clef_st_write(const char *path, const clef_st_entry *e, int n,
                  const clef_st_meta *meta, int nmeta, clef_err *err);

// Half-precision conversions (round to nearest even).
float clef_f16_to_f32(uint16_t h);

// Exact: bf16 is the top half of a float32 (inline: the bf16 products
// widen whole operands with it).
static inline float clef_bf16_to_f32(uint16_t h)
{
    const uint32_t bits = (uint32_t)h << 16;
    float x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

#endif

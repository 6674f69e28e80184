// Reading input files: once, regular files only, with a size bound, so that
// the bytes that are hashed are the bytes that are parsed (issue 16).
#ifndef CLEF_FILE_H
#define CLEF_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

// Physical memory of this machine in bytes (0 if unknown). No input may
// claim more: a size beyond it is bad input, not a run failure.
uint64_t clef_phys_mem_bytes(void);

// Reads the whole file at path into *bytes (malloc'd, caller frees) and
// *size. The file is opened once (O_NONBLOCK: a FIFO never blocks the open)
// and must be a regular file of at most `limit` bytes (0: the physical
// memory); it must not change size while it is read. Every refusal is
// CLEF_ERR_INPUT naming the file; out of memory is CLEF_ERR_RUN.
int clef_file_read(const char *path, uint64_t limit, uint8_t **bytes,
                   size_t *size, clef_err *err);

// 1 when `path` resolves (symlinks followed) to a file inside the folder
// `dir` resolves to, 0 when it resolves elsewhere, -1 (errno) when either
// cannot be resolved.
int clef_path_inside(const char *dir, const char *path);

#endif

// SHA-256 of buffers and files (libcrypto EVP), as lowercase hex.
#ifndef CLEF_SHA256_H
#define CLEF_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define CLEF_SHA256_HEX 65 // 64 hex digits + NUL

// hex (65) = SHA-256 of buf (n bytes). 0, or -1 if libcrypto fails.
int clef_sha256_hex(const void *buf, size_t n, char hex[CLEF_SHA256_HEX]);
// hex = SHA-256 of the file's bytes, read by clef_file_read (file.h). 0 or CLEF_ERR_INPUT (naming the file).
int clef_sha256_file(const char *path, char hex[CLEF_SHA256_HEX],
                     clef_err *err);
// 1 if s is 64 hex digits (either case).
int clef_sha256_is_hex(const char *s);
// Case-insensitive comparison of two hex digests: 1 when equal.
int clef_sha256_equal(const char *a, const char *b);

#endif

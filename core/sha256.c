// SHA-256 through libcrypto's EVP interface.
#include "sha256.h"

#include "file.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

int clef_sha256_hex(const void *buf, size_t n, char hex[CLEF_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(buf, n, md, &len, EVP_sha256(), NULL) || len != 32) {
        hex[0] = '\0';
        return -1;
    }
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    return 0;
}

int clef_sha256_file(const char *path, char hex[CLEF_SHA256_HEX], clef_err *err)
{
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = clef_file_read(path, 0, &bytes, &n, err);
    if (rc)
        return rc;
    rc = clef_sha256_hex(bytes, n, hex);
    free(bytes);
    if (rc)
        return clef_err_input(err, path, NULL, NULL, "SHA-256 failed");
    return 0;
}

int clef_sha256_is_hex(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

int clef_sha256_equal(const char *a, const char *b)
{
    if (!clef_sha256_is_hex(a) || !clef_sha256_is_hex(b))
        return 0;
    for (int i = 0; i < 64; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
    return 1;
}

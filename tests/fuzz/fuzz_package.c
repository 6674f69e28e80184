// libFuzzer harness: the package reader (core/package.h).
//
// The input is a package in one buffer: up to five parts separated by the
// line FZ_SEP ("=clef-fuzz-part="): package.json, lexical.safetensors,
// records-000.safetensors, records-001.safetensors, init.safetensors. A part
// the input lacks is the tiny package's valid file (generated at start-up),
// so an input of a manifest alone fuzzes the manifest against valid shards,
// lexical table and initial weights. Each "%SHA:NAME%" in the manifest is
// replaced by the SHA-256 of that file as written, so mutated shards still
// pass the digest check and reach the safetensors and record parsers (a
// manifest may also carry literal digests, which then almost never match).
// The files go to the process's temp folder; clef_package_read (the
// path-based API) reads them and clef_package_prepare prepares the records
// with the scalar kernels; a prepared package is looked through
// (clef_package_find of every record) and freed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "package.h"

static fz_buf defaults[FZ_NPARTS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (fz_tiny_package(defaults, 1)) {
        fprintf(stderr, "fuzz: cannot make the tiny package\n");
        abort();
    }
    return 0;
}

static int one_input(const uint8_t *data, size_t size)
{
    const uint8_t *part[FZ_NPARTS];
    size_t len[FZ_NPARTS];
    int n = fz_split(data, size, part, len);
    const char *dir = fz_tmpdir();
    fz_clean_tmpdir();
    char path[4096];
    for (int i = 1; i < FZ_NPARTS; i++) {
        fz_path(path, fz_part_names[i]);
        int rc = i < n ? fz_write(path, part[i], len[i])
                       : fz_write(path, defaults[i].p, defaults[i].n);
        if (rc)
            abort();
    }
    fz_buf manifest;
    fz_subst_sha(part[0], len[0], dir, &manifest);
    fz_path(path, fz_part_names[0]);
    if (fz_write(path, manifest.p, manifest.n))
        abort();
    fz_buf_free(&manifest);

    clef_package pkg;
    clef_err err = {0};
    int rc = clef_package_read(path, NULL, &pkg, &err);
    if (!rc && (rc = clef_package_prepare(&pkg, &clef_scalar_kernels, &err)))
        clef_package_free(&pkg); // read, not prepared: still ours to free
    if (fz_verbose())
        fprintf(stderr, "clef_package_read/prepare: %s\n", rc ? err.msg : "ok");
    if (rc != 0) {
        if (!err.msg[0] || (rc != CLEF_ERR_INPUT && rc != CLEF_ERR_RUN)) {
            fprintf(stderr, "fuzz: rejected with code %d and message \"%s\"\n",
                    rc, err.msg);
            abort();
        }
        return 0;
    }
    if (pkg.nrecords < 1 || pkg.V < 1 || !pkg.E) {
        fprintf(stderr, "fuzz: loaded an empty package\n");
        abort();
    }
    for (int i = 0; i < pkg.nrecords; i++)
        if (clef_package_find(&pkg, pkg.records[i].id) != i) {
            fprintf(stderr, "fuzz: record %d (\"%s\") not found by id\n", i,
                    pkg.records[i].id);
            abort();
        }
    clef_package_free(&pkg);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(data, size);
    fz_release_tmpdir();
    return 0;
}

// Packages (FORMATS.md): package.json + shards + lexical table, read and
// checked rule by rule before anything is trained or written
// (clef_package_read, no kernel runs), then prepared for the head
// (clef_package_prepare: the per-record constants, computed with kernels).
#ifndef CLEF_PACKAGE_H
#define CLEF_PACKAGE_H

#include "err.h"
#include "head.h"
#include "sha256.h"

#define CLEF_PACKAGE_FORMAT "clef-package/1"
#define CLEF_RECORD_ID_MAX 128

typedef struct clef_package {
    char *manifest; // the manifest path as given
    char *dir;      // its folder: every file name is relative to it
    char sha256[CLEF_SHA256_HEX]; // of the manifest's bytes
    clef_config cfg;              // "head"
    double dropout;               // "head".dropout, 0 ≤ p < 1 (0 when absent)
    char *provenance;             // compact JSON object, or NULL when absent
    char *lexical_path;
    char lexical_sha256[CLEF_SHA256_HEX]; // the manifest's digests: checked
    char init_sha256[CLEF_SHA256_HEX];    // on the bytes each load parses
    int V;                                // lexical rows
    float *E;                             // (V, d) frozen lexical table
    char *init_path;                      // initial_weights file, or NULL
    int nshards;
    char **shard_paths;                    // [nshards]
    char (*shard_sha256)[CLEF_SHA256_HEX]; // [nshards]
    int nrecords;
    clef_record *records; // [nrecords], manifest order
    int *record_shard;    // [nrecords]
    int nsplit[3];        // records per CLEF_SPLIT_*
    int Tmax, Qmax, Omax; // the largest record geometry
    int prepared;         // 1 once clef_package_prepare has succeeded
    int half_hidden;      // read by clef_package_read_half
} clef_package;

// Reads and checks the package at manifest_path. pin_sha256 (64 hex or NULL)
// must match the manifest's bytes. Every rule of FORMATS.md is checked (the
// SHA-256 of every file, every shape, bound and float) and each record's
// fields as the package gives them are filled in: id, split, H, ids,
// questions, spans and targets. No kernel runs: the per-record constants
// (xhat, qvhat, ctxhat, lex, lhat, is_score) stay NULL and prepared 0. On
// failure the package is freed and err names the file, record, field and
// rule.
int clef_package_read(const char *manifest_path, const char *pin_sha256,
                      clef_package *pkg, clef_err *err);
// The same for a head that runs in bf16: F16 and BF16 hidden states stay as
// the shard stores them (clef_record.Hh, 2 bytes a value: no float copy;
// their finiteness is checked on the bits), and clef_package_prepare_bf16
// prepares from them.
int clef_package_read_half(const char *manifest_path, const char *pin_sha256,
                           clef_package *pkg, clef_err *err);
// Computes every record's constants with kernels k (clef_record_prepare) on
// a package clef_package_read returned, and sets prepared. Nothing else in
// the package changes, so a prepared package can be shared read-only (const)
// by any number of runs with the same kernels. Preparing again recomputes
// the constants. On failure prepared is 0 and the caller still owns (and
// frees) the package.
int clef_package_prepare(clef_package *pkg, const clef_kernels *k,
                         clef_err *err);
void clef_package_free(clef_package *pkg);
// clef_record_add_bf16 on every record of a prepared package (runs in fp32
// and in bf16 share it, as a sweep's do): x̂ in bf16 beside the float x̂.
// 0 or error.
int clef_package_add_bf16(clef_package *pkg, const clef_kernels *k,
                          clef_err *err);
// clef_package_prepare, then clef_record_keep_bf16, record by record: at no
// point does the package hold every record's x̂ (or H) in float.
int clef_package_prepare_bf16(clef_package *pkg, const clef_kernels *k,
                              clef_err *err);

// Index of the record with this id, or -1.
int clef_package_find(const clef_package *pkg, const char *id);

// Path rule of FORMATS.md: relative, non-empty, no ".." component. 1 if ok.
// (The loader also resolves each file, symlinks followed, and refuses one
// that lands outside the package's folder.)
int clef_package_path_ok(const char *name);
// Record id rule: [A-Za-z0-9._-]{1,128}. 1 if ok.
int clef_package_id_ok(const char *id);

const char *clef_split_name(int split); // "train", ...
const char *clef_qtype_name(int qtype); // "noul", ...

#endif

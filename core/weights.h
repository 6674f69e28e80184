// Head weights and checkpoints as safetensors (FORMATS.md).
#ifndef CLEF_WEIGHTS_H
#define CLEF_WEIGHTS_H

#include "head.h"
#include "safetensors.h"

// Loads head weights (F32/F16/BF16) into a freshly allocated head. The
// configuration comes from __metadata__ "head" when present, else it is
// inferred from the tensor shapes (d, w from memory_projection; f from
// evidence_layers.0.feedforward.0; R, L by counting layers; heads from the
// metadata or, without it, `default_heads`). Every one of the tensors must be
// present with its exact shape. Errors name the file, tensor and rule.
int clef_weights_load(const char *path, int default_heads, clef_head *hd,
                      clef_err *err);
// The same, from a file whose SHA-256 must be sha256 (NULL: unchecked).
int clef_weights_load_pinned(const char *path, const char *sha256,
                             const char *field, int default_heads,
                             clef_head *hd, clef_err *err);
// Copies weights from an open file into an allocated head of matching config.
int clef_weights_read_into(const clef_st_file *f, clef_head *hd, clef_err *err);
// Saves the 122 tensors as F32 under their state-dict names, with metadata
// format "clef-head/1", "head" (config JSON) and any extra pairs.
int clef_weights_save(const char *path, const clef_head *hd,
                      const clef_st_meta *extra, int nextra, clef_err *err);
// The same with every tensor as dtype: CLEF_DT_F32, or CLEF_DT_BF16 (each
// value rounded to nearest even: what a bf16 reader loads).
int clef_weights_save_as(const char *path, const clef_head *hd,
                         clef_dtype dtype, const clef_st_meta *extra,
                         int nextra, clef_err *err);

// Checkpoint: weights + adamw.m/<name> + adamw.v/<name>, metadata format
// "clef-checkpoint/1", "step", plus extra pairs ("epoch", "package_sha256",
// "train"). Atomic write. Load restores params, m, v and hd->step.
int clef_checkpoint_save(const char *path, const clef_head *hd,
                         const clef_st_meta *extra, int nextra, clef_err *err);
int clef_checkpoint_load(const char *path, clef_head *hd, clef_err *err);
// The same from a file already open (its metadata stays readable): a resumed
// run reads the checkpoint once.
int clef_checkpoint_read(const clef_st_file *f, clef_head *hd, clef_err *err);

// 1 when the checkpoint at path holds exactly hd's step, head, params and
// moments (bit for bit, no other tensors), else 0. Reads one tensor at a
// time into a scratch buffer: no second head is allocated, so checking a
// run's final checkpoint costs one file's worth of memory, not a head.
int clef_checkpoint_matches(const char *path, const clef_head *hd,
                            clef_err *err);

// The head configuration as the JSON object of FORMATS.md ("hidden_size", ...).
char *clef_config_to_json(const clef_config *c); // malloc'd
#endif

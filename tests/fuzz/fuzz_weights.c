// libFuzzer harness: head weights and checkpoints (core/weights.h).
//
// The input is a whole safetensors file, written to the process's temp
// folder, then goes through the path-based loaders:
//   1. clef_weights_load(path, 2, ...): the head configuration from the
//      file's __metadata__ "head", else inferred from the shapes;
//   2. clef_checkpoint_load(path, zeroed head): the same, checkpoint rules;
//   3. with the tiny head's configuration fixed (hidden 4, width 4, heads 2,
//      feedforward 8, R 1, L 1): clef_checkpoint_load into an allocated head
//      (the file's configuration must match it), clef_checkpoint_matches,
//      and clef_st_open + clef_weights_read_into.
// A load that succeeds must give a head whose configuration passes
// clef_config_check; every head is freed.
//
// Huge sizes in the metadata (once an overflow of the layout arithmetic in
// core/params.c) must be input errors: regressions/weights/huge-*.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "weights.h"

static void check_loaded(const clef_head *hd, const char *what)
{
    clef_err err = {0};
    if (clef_config_check(&hd->cfg, NULL, &err) != 0 || !hd->params ||
        hd->ntensors != clef_tensor_count(&hd->cfg) ||
        hd->nparams != clef_param_count(&hd->cfg)) {
        fprintf(stderr,
                "fuzz: %s loaded a head it should have rejected "
                "(%s)\n",
                what, err.msg);
        abort();
    }
}

static void expect_input_error(int rc, const clef_err *err, const char *what)
{
    if (fz_verbose())
        fprintf(stderr, "%s: %s\n", what, rc ? err->msg : "ok");
    if (rc != 0 &&
        (!err->msg[0] || (rc != CLEF_ERR_INPUT && rc != CLEF_ERR_RUN))) {
        fprintf(stderr, "fuzz: %s failed with code %d and message \"%s\"\n",
                what, rc, err->msg);
        abort();
    }
}

static int one_input(const uint8_t *data, size_t size)
{
    char path[4096];
    fz_path(path, "input.safetensors");
    if (fz_write(path, data, size))
        abort();
    clef_head hd;
    clef_err err;
    int rc;

    memset(&err, 0, sizeof(err));
    rc = clef_weights_load(path, 2, &hd, &err);
    expect_input_error(rc, &err, "clef_weights_load");
    if (rc == 0) {
        check_loaded(&hd, "clef_weights_load");
        clef_head_free(&hd);
    }

    memset(&hd, 0, sizeof(hd));
    memset(&err, 0, sizeof(err));
    rc = clef_checkpoint_load(path, &hd, &err);
    expect_input_error(rc, &err, "clef_checkpoint_load");
    if (rc == 0) {
        check_loaded(&hd, "clef_checkpoint_load");
        clef_head_free(&hd);
    }

    // the fixed configuration
    memset(&err, 0, sizeof(err));
    if (clef_head_alloc(&hd, &fz_tiny_cfg, &err) != 0) {
        fprintf(stderr, "fuzz: tiny head: %s\n", err.msg);
        abort();
    }
    rc = clef_checkpoint_load(path, &hd, &err);
    expect_input_error(rc, &err, "clef_checkpoint_load (fixed head)");
    if (memcmp(&hd.cfg, &fz_tiny_cfg, sizeof(clef_config)) != 0 || !hd.params) {
        fprintf(stderr, "fuzz: clef_checkpoint_load changed an allocated "
                        "head's configuration\n");
        abort();
    }
    memset(&err, 0, sizeof(err));
    if (rc == 0 && clef_checkpoint_matches(path, &hd, &err) != 1) {
        fprintf(stderr,
                "fuzz: a checkpoint just loaded does not match "
                "itself (%s)\n",
                err.msg);
        abort();
    }
    clef_st_file f;
    memset(&err, 0, sizeof(err));
    if (clef_st_open(path, &f, &err) == 0) {
        rc = clef_weights_read_into(&f, &hd, &err);
        expect_input_error(rc, &err, "clef_weights_read_into");
        clef_st_close(&f);
    }
    clef_head_free(&hd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(data, size);
    fz_release_tmpdir();
    return 0;
}

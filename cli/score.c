// clef score: one reply per question (FORMATS.md), JSON lines on stdout.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mm.h"
#include "weights.h"

static const char *help =
    "usage: clef score --weights FILE --package DIR/package.json\n"
    "                  [--record ID] [--question ID] [--min-confidence P=0]\n"
    "                  [--package-sha256 HEX] [--backend NAME=auto]\n"
    "                  [--threads N] [--precision fp32|bf16]\n"
    "\n"
    "Prints one JSON object per line and question: the raw logits and\n"
    "probabilities of every option and a decision, `ranked` (the most\n"
    "probable option) or `abstained` (candidate_id null, with the reason)\n"
    "when the top probability is below --min-confidence. clef only ranks:\n"
    "`executed` is always false. Every record is scored unless --record\n"
    "(and --question) narrow it. The weights' head must match the package's.\n"
    "--precision bf16 runs the head's matrix products on bf16 operands\n"
    "(as clef train --precision bf16 trains them).\n";

typedef struct score_opts {
    const char *weights, *manifest, *record, *question, *pin, *backend;
    double min_conf;
    int threads, bf16;
} score_opts;

static int parse(int argc, char **argv, score_opts *o, clef_err *err)
{
    *o = (score_opts){.backend = "auto"};
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int r;
        if ((r = cli_flag(argc, argv, &i, "--weights", 1, &o->weights, err)) ||
            (r = cli_flag(argc, argv, &i, "--package", 1, &o->manifest, err)) ||
            (r = cli_flag(argc, argv, &i, "--record", 1, &o->record, err)) ||
            (r = cli_flag(argc, argv, &i, "--question", 1, &o->question,
                          err)) ||
            (r = cli_flag(argc, argv, &i, "--package-sha256", 1, &o->pin,
                          err)) ||
            (r = cli_flag(argc, argv, &i, "--backend", 1, &o->backend, err))) {
            if (r < 0)
                return CLEF_ERR_INPUT;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--min-confidence", 1, &v, err))) {
            if (r < 0 || cli_parse_double("--min-confidence", v, 0, 1,
                                          &o->min_conf, err))
                return CLEF_ERR_INPUT;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--precision", 1, &v, err))) {
            if (r < 0 || cli_parse_choice("--precision", v, "fp32", "bf16",
                                          &o->bf16, err))
                return CLEF_ERR_INPUT;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--threads", 1, &v, err))) {
            if (r < 0 ||
                cli_parse_int("--threads", v, 1, 4096, &o->threads, err))
                return CLEF_ERR_INPUT;
            continue;
        }
        return clef_err_input(err, NULL, NULL, argv[i],
                              "unknown flag (see clef score --help)");
    }
    if (!o->weights)
        return clef_err_input(err, NULL, NULL, "--weights", "is required");
    if (!o->manifest)
        return clef_err_input(err, NULL, NULL, "--package", "is required");
    if (o->pin && !clef_sha256_is_hex(o->pin))
        return clef_err_input(err, NULL, NULL, "--package-sha256",
                              "must be 64 hexadecimal digits");
    return 0;
}

static json_t *reply(const clef_record *r, int q, const float *z,
                     const float *p, double min_conf)
{
    int o0 = r->opt_off[q], n = r->opt_off[q + 1] - o0;
    json_t *scores = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(
            scores, json_pack("{s:s, s:f, s:f}", "candidate_id", r->oid[o0 + i],
                              "logit", (double)z[o0 + i], "probability",
                              (double)p[o0 + i]));
    int best = cli_argmax(p + o0, n);
    json_t *decision;
    if ((double)p[o0 + best] < min_conf) {
        char why[160];
        snprintf(why, sizeof(why),
                 "top probability %.4f (%s) is below --min-confidence %g",
                 (double)p[o0 + best], r->oid[o0 + best], min_conf);
        decision = json_pack("{s:s, s:s, s:n}", "status", "abstained", "reason",
                             why, "candidate_id");
    } else {
        decision = json_pack("{s:s, s:n, s:s}", "status", "ranked", "reason",
                             "candidate_id", r->oid[o0 + best]);
    }
    return json_pack("{s:s, s:s, s:o, s:s, s:o, s:b}", "record", r->id,
                     "question", r->qid[q], "scores", scores, "score_semantics",
                     "raw_logits", "decision", decision, "executed", 0);
}

int cli_score(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(help, stdout);
        return 0;
    }
    score_opts o;
    clef_err err = {0};
    clef_kernels ktab, k16;
    struct clef_mm mm = {0};
    const clef_kernels *k = &ktab;
    if (parse(argc, argv, &o, &err) || cli_kernels(o.backend, &ktab, &err))
        return cli_fail("score", &err);
    cli_set_threads(o.threads);
    clef_package pkg;
    if ((o.bf16 ? clef_package_read_half : clef_package_read)(o.manifest, o.pin,
                                                              &pkg, &err))
        return cli_fail("score", &err);
    clef_head hd;
    memset(&hd, 0, sizeof(hd));
    clef_ws *ws = NULL;
    cli_eval ev = {0};
    int rc = 0;
    int rsel = -1;
    if (o.record && (rsel = clef_package_find(&pkg, o.record)) < 0) {
        rc = clef_err_input(&err, pkg.manifest, o.record, "--record",
                            "no record with this id in the package");
        goto done;
    }
    if (o.question) {
        int found = 0;
        for (int i = 0; i < pkg.nrecords && !found; i++) {
            if (rsel >= 0 && i != rsel)
                continue;
            for (int q = 0; q < pkg.records[i].Q; q++)
                found |= !strcmp(pkg.records[i].qid[q], o.question);
        }
        if (!found) {
            rc = clef_err_input(&err, pkg.manifest, o.record, "--question",
                                "no question \"%s\" in the %s", o.question,
                                o.record ? "record" : "package");
            goto done;
        }
    }
    if ((rc = clef_weights_load(o.weights, pkg.cfg.h, &hd, &err)))
        goto done;
    if (memcmp(&hd.cfg, &pkg.cfg, sizeof(clef_config)) != 0) {
        rc = clef_err_input(&err, o.weights, NULL, "head",
                            "the weights' head differs from the package's "
                            "head (hidden_size %d vs %d, width %d vs %d)",
                            hd.cfg.d, pkg.cfg.d, hd.cfg.w, pkg.cfg.w);
        goto done;
    }
    if ((rc = (o.bf16 ? clef_package_prepare_bf16
                      : clef_package_prepare)(&pkg, k, &err)))
        goto done;
    if (o.bf16 && (clef_mm_init(&mm, &hd) || clef_mm_table(&ktab, &mm, &k16))) {
        rc = clef_err_input(&err, NULL, NULL, "--precision",
                            "backend %s has no bf16 matrix product (or out "
                            "of memory)",
                            ktab.backend);
        goto done;
    }
    if (o.bf16)
        k = &k16;
    ws = clef_ws_create(&pkg.cfg, pkg.Tmax, pkg.Qmax, pkg.Omax);
    clef_train_opts topts;
    clef_train_opts_default(&topts);
    if (!ws) {
        rc = clef_err_set(&err, CLEF_ERR_RUN, "out of memory");
        goto done;
    }
    if ((rc = cli_memory_attention(ws, &err)))
        goto done;
    if ((rc = cli_evaluate(k, &hd, &pkg, ws, &topts, &ev, &err)))
        goto done;
    for (int i = 0; i < pkg.nrecords; i++) {
        if (rsel >= 0 && i != rsel)
            continue;
        const clef_record *r = &pkg.records[i];
        for (int q = 0; q < r->Q; q++) {
            if (o.question && strcmp(r->qid[q], o.question))
                continue;
            json_t *j =
                reply(r, q, ev.z + ev.zoff[i], ev.p + ev.zoff[i], o.min_conf);
            char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
            json_decref(j);
            if (!s) {
                rc = clef_err_set(&err, CLEF_ERR_RUN, "cannot print JSON");
                goto done;
            }
            puts(s);
            free(s);
        }
    }
    if (fflush(stdout) != 0)
        rc = clef_err_set(&err, CLEF_ERR_RUN, "cannot write to stdout");
done:
    clef_mm_free(&mm);
    cli_eval_free(&ev);
    clef_ws_free(ws);
    clef_head_free(&hd);
    clef_package_free(&pkg);
    return rc ? cli_fail("score", &err) : 0;
}

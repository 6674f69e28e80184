// clef fixture: the seed walkthrough's synthetic package.
//
// Layout (documented in --help): records record-0 .. record-(N-1) are train,
// the next --validation records are validation. Hidden states and the
// 16-row lexical table are N(0,1) draws from clef's seeded generator, input
// ids uniform in [0, 16). Question q's span is the single token q, option o's
// span the single token Q + o (when Q + O < T; otherwise positions wrap
// modulo T, spans stay valid). Labels cycle, label = (record + 1 + q) mod n:
// balanced across records and independent of the hidden states. The package
// carries init.safetensors, a fresh head drawn with clef_head_init_random
// (--seed), so a run is reproducible whatever train's --seed.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rng.h"
#include "safetensors.h"
#include "weights.h"

#define FIXTURE_V 16

static const char *help =
    "usage: clef fixture --out DIR [--records N=2] [--validation N=1]\n"
    "                    [--positions T=6] [--hidden d=8] [--width w=8]\n"
    "                    [--heads h=2] [--feedforward f=16]\n"
    "                    [--routing-layers R=2] [--layers L=4]\n"
    "                    [--questions Q=2] [--options N=2] [--seed S=0]\n"
    "\n"
    "Writes a synthetic package into DIR (absent or empty): package.json,\n"
    "lexical.safetensors (16 rows), records-000.safetensors and\n"
    "init.safetensors (a fresh head drawn from --seed).\n"
    "--records train records (record-0, ...), then --validation held-out\n"
    "ones. Hidden states are N(0,1), input ids uniform; labels cycle\n"
    "(label = (record + 1 + question) mod options): balanced, independent of\n"
    "the features. Without --questions/--options: the seed's questions\n"
    "`action` (choice: read, clarify) and `mode` (choice: normal). With\n"
    "them: Q choice questions q0.. of N options o0.. each. Question q spans\n"
    "token q, option o token Q + o (wrapping modulo T when they do not fit).\n";

typedef struct fx_opts {
    const char *out;
    int records, validation, T;
    clef_config cfg;
    int Q, N, custom;
    uint64_t seed;
} fx_opts;

static int parse(int argc, char **argv, fx_opts *o, clef_err *err)
{
    *o = (fx_opts){.records = 2,
                   .validation = 1,
                   .T = 6,
                   .Q = 2,
                   .N = 2,
                   .cfg = {.d = 8, .w = 8, .h = 2, .f = 16, .R = 2, .L = 4}};
    const long big = 1 << 20;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int r = 0;
#define INT_FLAG(name, dst, lo)                                                \
    if ((r = cli_flag(argc, argv, &i, name, 1, &v, err))) {                    \
        if (r < 0 || cli_parse_int(name, v, lo, big, &(dst), err))             \
            return CLEF_ERR_INPUT;                                             \
        continue;                                                              \
    }
        if ((r = cli_flag(argc, argv, &i, "--out", 1, &o->out, err))) {
            if (r < 0)
                return CLEF_ERR_INPUT;
            continue;
        }
        INT_FLAG("--records", o->records, 0)
        INT_FLAG("--validation", o->validation, 0)
        INT_FLAG("--positions", o->T, 1)
        INT_FLAG("--hidden", o->cfg.d, 1)
        INT_FLAG("--width", o->cfg.w, 1)
        INT_FLAG("--heads", o->cfg.h, 1)
        INT_FLAG("--feedforward", o->cfg.f, 1)
        INT_FLAG("--routing-layers", o->cfg.R, 1)
        INT_FLAG("--layers", o->cfg.L, 1)
        if ((r = cli_flag(argc, argv, &i, "--questions", 1, &v, err))) {
            if (r < 0 || cli_parse_int("--questions", v, 1, big, &o->Q, err))
                return CLEF_ERR_INPUT;
            o->custom = 1;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--options", 1, &v, err))) {
            if (r < 0 || cli_parse_int("--options", v, 1, big, &o->N, err))
                return CLEF_ERR_INPUT;
            o->custom = 1;
            continue;
        }
        if ((r = cli_flag(argc, argv, &i, "--seed", 1, &v, err))) {
            if (r < 0 ||
                cli_parse_u64("--seed", v, CLI_SEED_MAX, &o->seed, err))
                return CLEF_ERR_INPUT;
            continue;
        }
#undef INT_FLAG
        return clef_err_input(err, NULL, NULL, argv[i],
                              "unknown flag (see clef fixture --help)");
    }
    if (!o->out)
        return clef_err_input(err, NULL, NULL, "--out", "is required");
    if (o->records + o->validation < 1)
        return clef_err_input(err, NULL, NULL, "--records",
                              "the package needs at least one record");
    if (clef_config_check(&o->cfg, "(flags)", err))
        return CLEF_ERR_INPUT;
    if (!cli_dir_absent_or_empty(o->out))
        return clef_err_input(err, o->out, NULL, "--out",
                              "exists and is not an empty folder (refusing "
                              "to overwrite)");
    return 0;
}

// One question of the fixture: id, options.
static void question_of(const fx_opts *o, int q, char *id, size_t n, int *nopt)
{
    if (!o->custom) {
        snprintf(id, n, "%s", q == 0 ? "action" : "mode");
        *nopt = q == 0 ? 2 : 1;
        return;
    }
    snprintf(id, n, "q%d", q);
    *nopt = o->N;
}

static void option_of(const fx_opts *o, int q, int i, char *id, size_t n)
{
    static const char *seed_opts[2][2] = {{"read", "clarify"}, {"normal", ""}};
    if (!o->custom)
        snprintf(id, n, "%s", seed_opts[q][i]);
    else
        snprintf(id, n, "o%d", i);
}

static json_t *file_entry(const char *dir, const char *name, clef_err *err)
{
    char path[4096], hex[CLEF_SHA256_HEX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (clef_sha256_file(path, hex, err))
        return NULL;
    return json_pack("{s:s, s:s}", "file", name, "sha256", hex);
}

static int write_package(const fx_opts *o, clef_err *err)
{
    const int d = o->cfg.d, T = o->T, Q = o->Q;
    const int nrec = o->records + o->validation;
    int O = 0;
    for (int q = 0; q < Q; q++) {
        char id[32];
        int n;
        question_of(o, q, id, sizeof(id), &n);
        O += n;
    }
    clef_rng rng;
    clef_rng_seed(&rng, o->seed);
    char path[4096];
    int rc = 0;
    // lexical (V, d)
    float *E = malloc((size_t)FIXTURE_V * d * sizeof(float));
    // per record: hidden (T, d), input_ids (T), question_spans (Q, 2),
    // option_spans (O, 2)
    float *H = malloc((size_t)nrec * T * d * sizeof(float));
    int32_t *ids = malloc((size_t)nrec * T * sizeof(int32_t));
    int32_t *qs = malloc((size_t)Q * 2 * sizeof(int32_t));
    int32_t *os = malloc((size_t)O * 2 * sizeof(int32_t));
    clef_st_entry *ent = calloc((size_t)nrec * 4, sizeof(clef_st_entry));
    char(*names)[160] = calloc((size_t)nrec * 4, sizeof(*names));
    json_t *root = NULL;
    clef_head hd;
    memset(&hd, 0, sizeof(hd));
    if (!E || !H || !ids || !qs || !os || !ent || !names) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "out of memory");
        goto done;
    }
    for (int i = 0; i < FIXTURE_V * d; i++)
        E[i] = clef_rng_normal(&rng);
    for (size_t i = 0; i < (size_t)nrec * T * d; i++)
        H[i] = clef_rng_normal(&rng);
    for (int i = 0; i < nrec * T; i++)
        ids[i] = (int32_t)clef_rng_below(&rng, FIXTURE_V);
    int fits = Q + O < T;
    for (int q = 0; q < Q; q++) {
        qs[2 * q] = fits ? q : q % T;
        qs[2 * q + 1] = qs[2 * q] + 1;
    }
    for (int k = 0; k < O; k++) {
        os[2 * k] = fits ? Q + k : (Q + k) % T;
        os[2 * k + 1] = os[2 * k] + 1;
    }
    if (cli_mkdirs(o->out)) {
        rc = clef_err_set(err, CLEF_ERR_RUN, "%s: cannot create: %s", o->out,
                          strerror(errno));
        goto done;
    }
    snprintf(path, sizeof(path), "%s/lexical.safetensors", o->out);
    clef_st_entry lex = {.name = "lexical",
                         .dtype = CLEF_DT_F32,
                         .ndim = 2,
                         .shape = {FIXTURE_V, d},
                         .data = E};
    if ((rc = clef_st_write(path, &lex, 1, NULL, 0, err)))
        goto done;
    for (int r = 0; r < nrec; r++) {
        static const char *suffix[4] = {"hidden", "input_ids", "question_spans",
                                        "option_spans"};
        for (int t = 0; t < 4; t++) {
            clef_st_entry *e = &ent[4 * r + t];
            snprintf(names[4 * r + t], sizeof(names[0]), "record-%d/%s", r,
                     suffix[t]);
            e->name = names[4 * r + t];
            e->dtype = t == 0 ? CLEF_DT_F32 : CLEF_DT_I32;
        }
        ent[4 * r + 0].ndim = 2; // hidden (T, d)
        ent[4 * r + 0].shape[0] = T;
        ent[4 * r + 0].shape[1] = d;
        ent[4 * r + 0].data = H + (size_t)r * T * d;
        ent[4 * r + 1].ndim = 1; // input_ids (T)
        ent[4 * r + 1].shape[0] = T;
        ent[4 * r + 1].data = ids + (size_t)r * T;
        ent[4 * r + 2].ndim = 2; // question_spans (Q, 2)
        ent[4 * r + 2].shape[0] = Q;
        ent[4 * r + 2].shape[1] = 2;
        ent[4 * r + 2].data = qs;
        ent[4 * r + 3].ndim = 2; // option_spans (O, 2)
        ent[4 * r + 3].shape[0] = O;
        ent[4 * r + 3].shape[1] = 2;
        ent[4 * r + 3].data = os;
    }
    snprintf(path, sizeof(path), "%s/records-000.safetensors", o->out);
    if ((rc = clef_st_write(path, ent, nrec * 4, NULL, 0, err)))
        goto done;
    if ((rc = clef_head_alloc(&hd, &o->cfg, err)))
        goto done;
    clef_head_init_random(&hd, o->seed);
    snprintf(path, sizeof(path), "%s/init.safetensors", o->out);
    if ((rc = clef_weights_save(path, &hd, NULL, 0, err)))
        goto done;

    // the manifest, written last: it carries the other files' hashes
    char *cfgjs = clef_config_to_json(&o->cfg);
    json_t *head = cfgjs ? json_loads(cfgjs, 0, NULL) : NULL;
    free(cfgjs);
    char notes[256];
    snprintf(notes, sizeof(notes),
             "clef fixture --seed %llu: N(0,1) hidden states, cyclic labels",
             (unsigned long long)o->seed);
    json_t *lexe = file_entry(o->out, "lexical.safetensors", err);
    json_t *inite = file_entry(o->out, "init.safetensors", err);
    json_t *shard = file_entry(o->out, "records-000.safetensors", err);
    if (!head || !lexe || !inite || !shard) {
        json_decref(head);
        json_decref(lexe);
        json_decref(inite);
        json_decref(shard);
        rc = err->code
                 ? err->code
                 : clef_err_set(err, CLEF_ERR_RUN, "cannot build the manifest");
        goto done;
    }
    json_t *records = json_array();
    for (int r = 0; r < nrec; r++) {
        json_t *qarr = json_array();
        for (int q = 0; q < Q; q++) {
            char qid[32], oid[32];
            int n;
            question_of(o, q, qid, sizeof(qid), &n);
            json_t *opts = json_array();
            for (int i = 0; i < n; i++) {
                option_of(o, q, i, oid, sizeof(oid));
                json_array_append_new(opts, json_string(oid));
            }
            json_array_append_new(qarr,
                                  json_pack("{s:s, s:s, s:o, s:i}", "id", qid,
                                            "type", "choice", "options", opts,
                                            "label", (r + 1 + q) % n));
        }
        char rid[32];
        snprintf(rid, sizeof(rid), "record-%d", r);
        json_array_append_new(
            records, json_pack("{s:s, s:s, s:i, s:o}", "id", rid, "split",
                               r < o->records ? "train" : "validation", "shard",
                               0, "questions", qarr));
    }
    root = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:o, s:o, s:[o], s:o}",
                     "format", CLEF_PACKAGE_FORMAT, "head", head, "provenance",
                     "backbone", "synthetic", "tokenizer", "synthetic", "notes",
                     notes, "lexical", lexe, "initial_weights", inite, "shards",
                     shard, "records", records);
    snprintf(path, sizeof(path), "%s/package.json", o->out);
    rc = cli_write_json(path, root, JSON_INDENT(1) | JSON_REAL_PRECISION(17),
                        err);
    if (!rc)
        printf("%s\n", path);
done:
    json_decref(root);
    clef_head_free(&hd);
    free(E);
    free(H);
    free(ids);
    free(qs);
    free(os);
    free(ent);
    free(names);
    return rc;
}

int cli_fixture(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(help, stdout);
        return 0;
    }
    fx_opts o;
    clef_err err = {0};
    if (parse(argc, argv, &o, &err))
        return cli_fail("fixture", &err);
    if (write_package(&o, &err))
        return cli_fail("fixture", &err);
    return 0;
}

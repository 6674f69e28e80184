// Suite metrics: the per-question metrics of result.json (cli/metrics.c) on
// small hand-computed cases: accuracy, macro-F1 with classes missing,
// confusion [label][predicted], NLL of labels and soft targets, ECE bins
// (a confidence of exactly 1.0, both sides of a bin edge), and the JSON per
// question id over records (option unions, one-option questions left out).
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../cli/metrics.h"

#define CLOSE(got, want)                                                       \
    cr_expect(fabs((got) - (want)) <= 1e-12 * (1 + fabs(want)),                \
              #got " = %.17g, want %.17g", (double)(got), (double)(want))

Test(metrics, accuracy_and_confusion)
{
    // predictions 0, 2, 1, 1 (first largest on the tie of row 3)
    const float p[4 * 3] = {0.7f, 0.2f, 0.1f, 0.1f, 0.3f,  0.6f,
                            0.2f, 0.5f, 0.3f, 0.1f, 0.45f, 0.45f};
    const int label[4] = {0, 2, 2, 1};
    int cm[9];
    cli_qmetrics m = {.confusion = cm};
    cr_assert_eq(cli_metrics_compute(p, label, NULL, 4, 3, &m), 0);
    cr_expect_eq(m.n, 4);
    cr_expect_eq(m.k, 3);
    CLOSE(m.accuracy, 3.0 / 4);
    const int want[9] = {1, 0, 0, /**/ 0, 1, 0, /**/ 0, 1, 1};
    for (int i = 0; i < 9; i++)
        cr_expect_eq(cm[i], want[i], "confusion[%d][%d] = %d, want %d", i / 3,
                     i % 3, cm[i], want[i]);
}

// Class 2 is neither a label nor a prediction: left out of the mean.
Test(metrics, macro_f1_leaves_out_absent_classes)
{
    const float p[4 * 3] = {0.8f, 0.1f, 0.1f, 0.3f, 0.6f, 0.1f,
                            0.2f, 0.7f, 0.1f, 0.1f, 0.8f, 0.1f};
    const int label[4] = {0, 0, 1, 1}; // predicted 0, 1, 1, 1
    int cm[9];
    cli_qmetrics m = {.confusion = cm};
    cr_assert_eq(cli_metrics_compute(p, label, NULL, 4, 3, &m), 0);
    // F1_0 = 2·1 / (2 + 1), F1_1 = 2·2 / (2 + 3)
    CLOSE(m.macro_f1, (2.0 / 3 + 4.0 / 5) / 2);
    CLOSE(m.accuracy, 3.0 / 4);
}

// A class seen only as a prediction counts, with F1 0.
Test(metrics, macro_f1_counts_a_class_only_predicted)
{
    const float p[2 * 3] = {0.9f, 0.05f, 0.05f, 0.2f, 0.7f, 0.1f};
    const int label[2] = {0, 0};
    int cm[9];
    cli_qmetrics m = {.confusion = cm};
    cr_assert_eq(cli_metrics_compute(p, label, NULL, 2, 3, &m), 0);
    CLOSE(m.macro_f1, (2.0 / 3 + 0) / 2);
    cr_expect_eq(cm[0 * 3 + 1], 1);
}

Test(metrics, nll_of_labels_and_soft_targets)
{
    const float p[2 * 2] = {0.25f, 0.75f, 0.5f, 0.5f};
    const int label[2] = {1, 0};
    int cm[4];
    cli_qmetrics m = {.confusion = cm};
    cr_assert_eq(cli_metrics_compute(p, label, NULL, 2, 2, &m), 0);
    CLOSE(m.nll, (-log(0.75) - log(0.5)) / 2);
    // soft target of row 0: 0.2 / 0.8; row 1 one-hot
    const float y[2 * 2] = {0.2f, 0.8f, 1.0f, 0.0f};
    cr_assert_eq(cli_metrics_compute(p, label, y, 2, 2, &m), 0);
    double ce0 = -(double)0.2f * log(0.25) - (double)0.8f * log(0.75);
    CLOSE(m.nll, (ce0 - log(0.5)) / 2);
    // a probability that underflowed to 0 gives a large, finite NLL
    const float pz[2] = {1.0f, 0.0f};
    const int l1[1] = {1};
    cr_assert_eq(cli_metrics_compute(pz, l1, NULL, 1, 2, &m), 0);
    cr_expect(isfinite(m.nll) && m.nll > 80, "nll %g", m.nll);
}

// Bins (b/15, (b+1)/15]: 1.0 falls into the last bin together with 0.95;
// 0.4f (just above 6/15) and the float below it (just below) fall into
// different bins.
Test(metrics, ece_bins_edges_and_one)
{
    const float c1 = 0.4f, c2 = nextafterf(0.4f, 0.0f);
    cr_assert((double)c1 > 6.0 / 15 && (double)c2 < 6.0 / 15);
    const float r1 = (1 - c1) / 2, r2 = (1 - c2) / 2;
    const float p[4 * 3] = {1.0f,  0.0f,  0.0f, // conf 1.0, correct
                            0.95f, 0.05f, 0.0f, // conf .95, wrong
                            c1,    r1,    r1,   // conf c1, wrong
                            c2,    r2,    r2};  // conf c2, correct
    const int label[4] = {0, 1, 1, 0};
    int cm[9];
    cli_qmetrics m = {.confusion = cm};
    cr_assert_eq(cli_metrics_compute(p, label, NULL, 4, 3, &m), 0);
    double b14 = fabs(0.5 - (1.0 + (double)0.95f) / 2) * 2 / 4;
    double want = b14 + (double)c1 / 4 + (1 - (double)c2) / 4;
    CLOSE(m.ece, want);
    // all in one bin: |acc − conf| of that bin
    const float q[2 * 2] = {0.6f, 0.4f, 0.62f, 0.38f};
    const int lq[2] = {0, 1};
    cr_assert_eq(cli_metrics_compute(q, lq, NULL, 2, 2, &m), 0);
    CLOSE(m.ece, fabs(0.5 - ((double)0.6f + (double)0.62f) / 2));
    // 0.62 and 0.68 share a bin of ten but not of fifteen
    const float s[2 * 2] = {0.62f, 0.38f, 0.68f, 0.32f};
    cr_assert_eq(cli_metrics_compute(s, lq, NULL, 2, 2, &m), 0);
    CLOSE(m.ece, (1 - (double)0.62f) / 2 + (double)0.68f / 2);
}

Test(metrics, bad_input_is_refused)
{
    const float p[2] = {0.5f, 0.5f};
    int cm[4], l2[1] = {2}, ln[1] = {-1};
    cli_qmetrics m = {.confusion = cm};
    cr_expect_eq(cli_metrics_compute(p, l2, NULL, 1, 2, &m), -1);
    cr_expect_eq(cli_metrics_compute(p, ln, NULL, 1, 2, &m), -1);
    cr_expect_eq(cli_metrics_compute(p, ln, NULL, 0, 2, &m), -1);
    // non-finite probabilities (a diverged head) are refused, not binned
    const float pn[2] = {NAN, NAN};
    int l0[1] = {0};
    cr_expect_eq(cli_metrics_compute(pn, l0, NULL, 1, 2, &m), -1);
}

// ---- per question id over records ----

typedef struct fake_q {
    const char *qid;
    int nopt;
    const char *opts[3];
    int label; // -1: no target
    float p[3];
} fake_q;

// Records of one question each, all in split `split`.
static void fake_package(const fake_q *qs, const int *split, int n,
                         clef_package *pkg, clef_record *recs, cli_eval *ev,
                         size_t *zoff, float *p, int (*off)[2], int *lab,
                         int *has, float *tgt, char **qid, char **oid)
{
    memset(pkg, 0, sizeof(*pkg));
    memset(ev, 0, sizeof(*ev));
    pkg->records = recs;
    pkg->nrecords = n;
    zoff[0] = 0;
    for (int i = 0; i < n; i++) {
        clef_record *r = &recs[i];
        memset(r, 0, sizeof(*r));
        r->split = split[i];
        r->Q = 1;
        r->O = qs[i].nopt;
        off[i][0] = 0;
        off[i][1] = qs[i].nopt;
        r->opt_off = off[i];
        lab[i] = qs[i].label;
        has[i] = qs[i].label >= 0;
        r->label = &lab[i];
        r->has_target = &has[i];
        r->target = tgt + 3 * i;
        qid[i] = (char *)qs[i].qid;
        r->qid = &qid[i];
        r->oid = oid + 3 * i;
        for (int j = 0; j < qs[i].nopt; j++) {
            oid[3 * i + j] = (char *)qs[i].opts[j];
            tgt[3 * i + j] = j == qs[i].label;
            p[zoff[i] + j] = qs[i].p[j];
        }
        zoff[i + 1] = zoff[i] + (size_t)qs[i].nopt;
    }
    ev->zoff = zoff;
    ev->p = p;
}

Test(metrics, per_question_union_and_exclusions)
{
    const fake_q qs[5] = {
        {"act", 2, {"read", "ask"}, 1, {0.3f, 0.7f}},
        {"act", 3, {"ask", "read", "stop"}, 2, {0.5f, 0.2f, 0.3f}},
        {"mode", 1, {"normal"}, 0, {1.0f}},            // one option: out
        {"act", 2, {"read", "ask"}, -1, {0.9f, 0.1f}}, // no label: out
        {"act", 2, {"read", "ask"}, 0, {0.6f, 0.4f}},  // validation
    };
    const int split[5] = {0, 0, 0, 0, 1};
    clef_package pkg;
    clef_record recs[5];
    cli_eval ev;
    size_t zoff[6];
    float p[16], tgt[15];
    int off[5][2], lab[5], has[5];
    char *qid[5], *oid[15];
    fake_package(qs, split, 5, &pkg, recs, &ev, zoff, p, off, lab, has, tgt,
                 qid, oid);
    json_t *j = cli_per_question_json(&pkg, &ev, CLI_SPLITS_ALL);
    cr_assert_not_null(j);
    char *txt = json_dumps(j, JSON_COMPACT);
    json_t *tr = json_object_get(j, "train");
    cr_assert_not_null(tr, "%s", txt);
    cr_expect_null(json_object_get(tr, "mode"), "%s", txt);
    cr_expect_null(json_object_get(j, "test"), "%s", txt);
    json_t *act = json_object_get(tr, "act");
    cr_assert_not_null(act, "%s", txt);
    cr_expect_eq(json_integer_value(json_object_get(act, "n")), 2, "%s", txt);
    json_t *opts = json_object_get(act, "options");
    cr_assert_eq(json_array_size(opts), 3, "%s", txt);
    const char *want[3] = {"read", "ask", "stop"}; // first-seen union
    for (int i = 0; i < 3; i++)
        cr_expect_str_eq(json_string_value(json_array_get(opts, i)), want[i]);
    cr_expect(json_is_true(json_object_get(act, "options_differ")), "%s", txt);
    // record 0: label ask, predicted ask; record 1: label stop, predicted ask
    CLOSE(json_real_value(json_object_get(act, "accuracy")), 0.5);
    json_t *cm = json_object_get(act, "confusion");
    cr_expect_eq(json_integer_value(json_array_get(json_array_get(cm, 1), 1)),
                 1, "%s", txt);
    cr_expect_eq(json_integer_value(json_array_get(json_array_get(cm, 2), 1)),
                 1, "%s", txt);
    CLOSE(json_real_value(json_object_get(act, "nll")),
          (-log((double)0.7f) - log((double)0.3f)) / 2);
    json_t *va = json_object_get(json_object_get(j, "validation"), "act");
    cr_expect(json_is_false(json_object_get(va, "options_differ")), "%s", txt);
    CLOSE(json_real_value(json_object_get(va, "accuracy")), 1.0);
    json_t *acc = cli_split_accuracy_json(&pkg, &ev, 0);
    CLOSE(json_real_value(json_object_get(acc, "act")), 0.5);
    cr_expect_eq(json_object_size(acc), 1);
    json_decref(acc);
    free(txt);
    json_decref(j);
}

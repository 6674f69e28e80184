// Classification metrics of one question over many examples (accuracy,
// macro-F1, NLL, ECE, confusion), and their per-question JSON for
// result.json (metrics.per_question, history).
#ifndef CLEF_CLI_METRICS_H
#define CLEF_CLI_METRICS_H

#include <jansson.h>

#include "cli.h"

#define CLI_ECE_BINS 15

typedef struct cli_qmetrics {
    int n, k;        // examples, classes
    double accuracy; // share of argmax(p) == label
    double macro_f1; // mean F1 over classes seen as label or prediction
    double nll;      // mean −Σ y log p (−log p[label] for a one-hot y)
    double ece;      // Σ_b |acc_b − conf_b| · n_b / n, 15 equal-width bins
    int *confusion;  // (k, k) caller's buffer: [label][predicted] counts
} cli_qmetrics;

// p (n, k) probabilities row by row; label (n) in [0, k); target (n, k) the
// distributions for the NLL, or NULL for one-hot labels. The prediction is
// the first largest probability, the confidence that probability; a
// confidence c falls into bin ceil(15 c) − 1 (bins (b/15, (b+1)/15], c = 0
// into bin 0, c = 1 into bin 14). log p is taken of max(p, FLT_MIN), so an
// underflowed probability gives a large finite NLL. m->confusion must hold
// k·k ints. Returns 0, or −1 when n < 1, k < 1, a label is out of range or
// a probability or target is not finite.
int cli_metrics_compute(const float *p, const int *label, const float *target,
                        int n, int k, cli_qmetrics *m);

// ---- per question id over the records of an evaluation ----
// Splits as a bit mask: 1 << CLEF_SPLIT_*.
#define CLI_SPLITS_ALL 7u
// {"<split>": {"<qid>": {"n", "options", "options_differ", "accuracy",
// "macro_f1", "nll", "ece", "confusion"}}} for each split of mask with
// labelled questions. A question id's options are the union of its records'
// lists in first-seen order (options_differ says when they are not all the
// same); each record's probabilities are placed into that union (absent
// options 0). Question instances with one option, and ids whose union has one
// option, are left out, and so is an id whose probabilities are not all
// finite (a diverged run). NULL when out of memory.
json_t *cli_per_question_json(const clef_package *pkg, const cli_eval *ev,
                              unsigned mask);
// {"<qid>": accuracy} of one split (the history's per-question accuracy).
json_t *cli_split_accuracy_json(const clef_package *pkg, const cli_eval *ev,
                                int split);

#endif

#!/usr/bin/env python3
"""Per-question metrics for clef decision heads and their baselines.

The same definitions are implemented in C for `clef train`'s result.json;
keep the two in step. For one question with options o_0 .. o_{K-1} and n
evaluated examples (probs (n, K), one row per example):

- label: the given integer label; with soft `targets` (n, K), the label of
  example i is argmax_k targets[i, k] (the first maximum on ties).
- predicted: argmax_k probs[i, k] (the first maximum on ties).
- accuracy: (number of i with predicted == label) / n.
- macro_f1: for each class c, tp = #(label == c and predicted == c),
  fp = #(label != c and predicted == c), fn = #(label == c and
  predicted != c); F1_c = 2 tp / (2 tp + fp + fn). A class with
  tp + fp + fn == 0 (it appears neither as a label nor as a prediction) is
  left out; macro_f1 is the mean of F1_c over the classes left in.
- nll: mean over i of -log p_i. Without targets p_i = probs[i, label_i];
  with targets the per-example term is -sum_k targets[i, k] log probs[i, k],
  where a term with targets[i, k] == 0 counts 0. Every probability is
  floored at FLT_MIN = 2**-126 (the smallest normal float32) before the
  log, so an NLL term is at most 87.337.
- ece: 15 equal-width bins over conf_i = max_k probs[i, k]. Bin b (0..14)
  holds the conf in (b/15, (b+1)/15]; conf == 0 falls in bin 0 and conf
  above 1 (rounding) in bin 14. The bin is the smallest b with
  conf <= (b+1)/15 (the edge computed as (b+1)/15.0 in double; for a
  float32 conf this is the exact rule ceil(conf * 15) - 1, as in C).
  ece = sum_b |acc_b - conf_b| * n_b / n, where n_b is the bin's count,
  acc_b the fraction of its examples with predicted == label and conf_b the
  mean of their conf; empty bins add 0.
- confusion: K x K counts, confusion[label][predicted], in options order.

With n == 0, accuracy, macro_f1, nll and ece are None and confusion is all
zeros. Sums run in float64.

mean_sd(values): mean and sample standard deviation (ddof=1, i.e. divided
by n - 1; 0 for a single value; mean and sd None for none; None values are
dropped), plus the values themselves.
"""

import math
import statistics

import numpy as np

__all__ = ["question_metrics", "mean_sd", "ece_bin", "ECE_BINS",
           "PROB_FLOOR"]

ECE_BINS = 15
PROB_FLOOR = 2.0 ** -126   # FLT_MIN


def ece_bin(conf, bins=ECE_BINS):
    """The bin of one confidence: smallest b with conf <= (b+1)/bins."""
    conf = float(conf)
    if not conf > 0.0:
        return 0
    b = int(math.ceil(conf * bins)) - 1
    b = min(max(b, 0), bins - 1)
    while b > 0 and conf <= b / float(bins):
        b -= 1
    while b < bins - 1 and conf > (b + 1) / float(bins):
        b += 1
    return b


def question_metrics(probs, labels, options, targets=None):
    """Metrics of one question; see the module docstring for definitions.

    probs: (n, K) probabilities; labels: (n,) ints in [0, K) (ignored where
    targets is given: the labels are then argmax targets); options: the K
    option ids; targets: optional (n, K) soft targets.
    """
    options = list(options)
    K = len(options)
    P = np.asarray(probs, dtype=np.float64)
    if P.ndim == 1 and P.size == 0:
        P = P.reshape(0, K)
    if P.ndim != 2 or P.shape[1] != K:
        raise ValueError("probs has shape %s, want (n, %d)"
                         % (P.shape, K))
    n = P.shape[0]
    if targets is not None:
        Y = np.asarray(targets, dtype=np.float64).reshape(n, K) if n else \
            np.zeros((0, K))
        lab = np.argmax(Y, axis=1) if n else np.zeros(0, dtype=np.int64)
    else:
        Y = None
        lab = np.asarray(labels, dtype=np.int64).reshape(-1)
        if lab.shape[0] != n:
            raise ValueError("%d labels for %d rows of probabilities"
                             % (lab.shape[0], n))
        if n and (lab.min() < 0 or lab.max() >= K):
            raise ValueError("a label is outside [0, %d)" % K)
    confusion = np.zeros((K, K), dtype=np.int64)
    out = {"n": int(n), "options": options}
    if n == 0:
        out.update(accuracy=None, macro_f1=None, nll=None, ece=None,
                   confusion=confusion.tolist())
        return out
    pred = np.argmax(P, axis=1)
    correct = pred == lab
    np.add.at(confusion, (lab, pred), 1)

    f1s = []
    for c in range(K):
        tp = int(confusion[c, c])
        fp = int(confusion[:, c].sum()) - tp
        fn = int(confusion[c, :].sum()) - tp
        if tp + fp + fn == 0:
            continue
        f1s.append(2.0 * tp / (2.0 * tp + fp + fn))

    logp = np.log(np.maximum(P, PROB_FLOOR))
    if Y is None:
        terms = -logp[np.arange(n), lab]
    else:
        terms = -np.sum(np.where(Y > 0, Y * logp, 0.0), axis=1)

    conf = P.max(axis=1)
    cnt = np.zeros(ECE_BINS)
    acc_sum = np.zeros(ECE_BINS)
    conf_sum = np.zeros(ECE_BINS)
    for i in range(n):
        b = ece_bin(conf[i])
        cnt[b] += 1
        acc_sum[b] += 1.0 if correct[i] else 0.0
        conf_sum[b] += conf[i]
    ece = 0.0
    for b in range(ECE_BINS):
        if cnt[b]:
            ece += abs(acc_sum[b] / cnt[b] - conf_sum[b] / cnt[b]) * cnt[b] / n

    out.update(accuracy=float(np.mean(correct)),
               macro_f1=float(np.mean(f1s)) if f1s else None,
               nll=float(np.mean(terms)), ece=float(ece),
               confusion=confusion.tolist())
    return out


def mean_sd(values):
    """{"mean", "sd" (ddof=1; 0 for one value), "values"}; Nones dropped."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"mean": None, "sd": None, "values": []}
    # statistics works in exact rationals: equal values give sd 0 exactly
    sd = float(statistics.stdev(vals)) if len(vals) > 1 else 0.0
    return {"mean": float(statistics.fmean(vals)), "sd": sd, "values": vals}

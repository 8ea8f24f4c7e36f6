"""Golden values for src/core/metrics.ts, computed from the definitions (standard library only).

AUC by counting pairs (a tie counts one half), AP by scikit-learn's step sum over distinct
thresholds, TPR at max FPR by trying every threshold. None stands for a missing score (-inf).
Run: python3 test/golden/metrics_golden.py > test/golden/metrics-golden.json
"""
import json
import math

CASES = {
    "separable": ([1, 1, 1, 0, 0, 0], [3.0, 2.5, 2.0, 1.0, 0.5, 0.0]),
    "ties": ([1, 0, 1, 0, 1, 0, 0, 1], [0.9, 0.9, 0.5, 0.5, 0.5, 0.1, -0.2, 0.1]),
    "missing_scores": ([1, 1, 0, 0, 0, 1, 0], [2.0, None, None, 0.3, 1.5, 0.3, None]),
    "inverted": ([0, 0, 1, 1], [5.0, 4.0, 1.0, 0.0]),
    "mixed": ([1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0], [0.8, 0.7, 0.7, 0.1, -0.3, 0.2, 0.95, 0.05, 0.7, -0.5, 0.0, 0.2]),
}


def val(s):
    return -math.inf if s is None else s


def auc(y, s):
    pos = [val(b) for a, b in zip(y, s) if a]
    neg = [val(b) for a, b in zip(y, s) if not a]
    total = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return total / (len(pos) * len(neg))


def counts(y, s, t):
    tp = sum(1 for a, b in zip(y, s) if a and val(b) >= t)
    fp = sum(1 for a, b in zip(y, s) if not a and val(b) >= t)
    return tp, fp


def ap(y, s):
    pos = sum(y)
    out, prev = 0.0, 0.0
    for t in sorted({val(b) for b in s}, reverse=True):
        tp, fp = counts(y, s, t)
        out += (tp / pos - prev) * (tp / (tp + fp))
        prev = tp / pos
    return out


def tpr_at(y, s, max_fpr):
    pos, neg = sum(y), len(y) - sum(y)
    best = (0.0, 0.0)
    for t in sorted({val(b) for b in s}, reverse=True):
        tp, fp = counts(y, s, t)
        if fp / neg <= max_fpr and tp / pos > best[0]:
            best = (tp / pos, fp / neg)
    return {"tpr": best[0], "fpr": best[1]}


out = {}
for name, (y, s) in CASES.items():
    out[name] = {
        "labels": y,
        "scores": s,
        "roc_auc": auc(y, s),
        "average_precision": ap(y, s),
        "tpr_at_fpr_0": tpr_at(y, s, 0.0),
        "tpr_at_fpr_0.2": tpr_at(y, s, 0.2),
        "tpr_at_fpr_0.5": tpr_at(y, s, 0.5),
    }
print(json.dumps(out, indent=1))

"""Chooses the guard's userWeight (flag span i iff dS_i > w x dU - tau) from leave-one-out scores.

The rule, fixed before looking: the weight with the best mean ROC-AUC over the two selection sets, the
generator's validation split and adv-val (AgentDojo guard cases cut from training runs held out of
training, model/agentdojo.py); weights within 0.001 of the best go to the smallest (the closest to the
seeds' w = 1). Sets after `--report` are scored for the table only, never for the choice.

    /usr/bin/python3 lab/model/select_user_weight.py \\
        --select validation=lab/runs/R/validation-scores.jsonl adv-val=lab/runs/R/adv-val-scores.jsonl \\
        --report test=lab/runs/R/test-scores.jsonl dev=dev-scores.jsonl

(score files from score_loo.py; tool-description poisoning cases are left out: descriptions keep w = 1.)
"""
from __future__ import annotations

import argparse
import json

from loo_report import roc_auc

WEIGHTS = [w / 10 for w in range(10, 61, 5)]
TIE = 0.001


def load(path: str) -> list[dict]:
    recs = [json.loads(line) for line in open(path) if line.strip()]
    return [r for r in recs if r.get("kind") not in ("tool_poisoning", "ignored_poisoning")]


def case_score(rec: dict, w: float) -> float:
    spans = rec["spans"].values()
    return max((s["d"] - w * rec["user"]["d"] for s in spans), default=-1e9)


def measure(recs: list[dict], w: float) -> dict:
    pos = [case_score(r, w) for r in recs if r["label"] == "injected"]
    neg = sorted((case_score(r, w) for r in recs if r["label"] != "injected"), reverse=True)
    at5 = neg[int(0.05 * len(neg))] if neg else -1e9
    return {"roc_auc": roc_auc(pos, neg), "tpr_at_5pct_fpr": sum(p > at5 for p in pos) / len(pos),
            "tpr": sum(p > 0 for p in pos) / len(pos), "fpr": sum(n > 0 for n in neg) / len(neg)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--select", nargs="+", required=True, metavar="NAME=FILE")
    ap.add_argument("--report", nargs="*", default=[], metavar="NAME=FILE")
    args = ap.parse_args()
    select = {n: load(p) for n, p in (a.split("=", 1) for a in args.select)}
    report = {n: load(p) for n, p in (a.split("=", 1) for a in args.report)}
    rows = []
    for w in WEIGHTS:
        m = {n: measure(r, w) for n, r in {**select, **report}.items()}
        rows.append((w, sum(m[n]["roc_auc"] for n in select) / len(select), m))
    best = max(r[1] for r in rows)
    chosen = min(w for w, mean, _ in rows if mean >= best - TIE)
    for w, mean, m in rows:
        cells = " | ".join(f"{n} AUC {v['roc_auc']:.3f} TPR@5%FPR {v['tpr_at_5pct_fpr']:.2f} at 0: {v['tpr']:.2f}/{v['fpr']:.2f}"
                           for n, v in m.items())
        print(f"w={w:.1f} selection mean AUC {mean:.4f} | {cells}{'  <- chosen' if w == chosen else ''}")
    print(json.dumps({"chosen": chosen}))


if __name__ == "__main__":
    main()

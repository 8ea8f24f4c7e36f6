"""The held-out table: leave-one-out ranking and the guard rule's rates, per run and per held-out set.

Reads the score files lab/model/score_loo.py wrote (`<run>/<set>-scores.jsonl`) and prints, for each
set, ROC-AUC of the default rule (dS - 2 dU, tool results; dT - dU, tool descriptions) and TPR / FPR
at a tau. Sets and what they hold out:

- broad-validation / broad-test: model/corpus.py's held-out tool domains and phrasing families
  (validation chooses, test reports);
- adv-val: AgentDojo guard cases cut from training runs held out by run id (chooses);
- adv-<suite>: every training run of a suite, for a model trained without that suite (chooses);
- dev: AgentDojo dev, by suite; a cross-suite model is read only on the suite it never saw (reports);
- asb: ASB, split by agent: even-numbered agents in sorted order choose, odd-numbered report.

    python3 lab/model/heldout_report.py lab/runs/gpu-* [--tau -0.1] [--json out.json]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random

from loo_report import rates

ASB_AGENTS = sorted(["academic_search_agent", "aerospace_engineer_agent", "autonomous_driving_agent",
                     "ecommerce_manager_agent", "education_consultant_agent", "financial_analyst_agent",
                     "legal_consultant_agent", "medical_advisor_agent", "psychological_counselor_agent",
                     "system_admin_agent"])
ASB_CHOOSE = set(ASB_AGENTS[0::2])
POISON_KINDS = ("tool_poisoning", "ignored_poisoning")


def sample_asb_pairs(cases: list[dict], n: int, seed: int, choose: bool | None = None) -> list[dict]:
    """Both twins of `n` ASB pairs drawn at random (seeded), from the choosing agents, the reporting ones,
    or (None) all of them."""
    pairs = sorted({c["pair_id"] for c in cases if choose is None or (c["suite"] in ASB_CHOOSE) == choose})
    random.Random(seed).shuffle(pairs)
    keep = set(pairs[:n])
    return [c for c in cases if c["pair_id"] in keep]


def load(path: str) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def slices(name: str, recs: list[dict]) -> dict[str, list[dict]]:
    """The named slices of one score file; tool-description slices carry a `tools:` prefix."""
    if name == "asb":
        return {"asb-choose": [r for r in recs if r.get("suite") in ASB_CHOOSE],
                "asb-report": [r for r in recs if r.get("suite") not in ASB_CHOOSE]}
    if name == "dev":
        return {f"dev-{s}": [r for r in recs if r.get("suite") == s] for s in ("banking", "slack")}
    out = {name: [r for r in recs if r.get("kind") not in POISON_KINDS]}
    if any(r.get("tools") for r in recs):
        out[f"tools:{name}"] = [r for r in recs if r.get("kind") in POISON_KINDS + ("benign", "benign_copy")]
        # Clean conversations only: the 'no attack anywhere' false-positive rate.
        out[f"clean:{name}"] = [r for r in recs if r.get("kind") in ("benign", "benign_copy")]
    return out


def median_du(recs: list[dict], label: str) -> float | None:
    """The median user delta (dU) of one label's calls: an injected call should barely need the request, a
    benign one should; a model whose injected dU climbs towards its benign dU stops separating them, whatever
    its ROC-AUC on the sets it was chosen on (gpu-trials.md, "cpu-ft2 against the acceptance cases")."""
    xs = sorted(r["user"]["d"] for r in recs if r["label"] == label and r.get("user"))
    return xs[len(xs) // 2] if xs else None


def report(run: str, tau: float) -> dict:
    out = {}
    for path in sorted(glob.glob(f"{run}/*-scores.jsonl")):
        name = os.path.basename(path)[: -len("-scores.jsonl")]
        for sl, recs in slices(name, load(path)).items():
            if not recs:
                continue
            if sl.startswith("tools:"):
                out[sl] = rates(recs, "seed", tau=-0.05, which="tools")
            elif sl.startswith("clean:"):
                spans = rates(recs, "user_weight_2", tau=tau)
                tools = rates(recs, "seed", tau=-0.05, which="tools")
                out[sl] = {"fpr_results": spans["fpr"], "fpr_descriptions": tools["fpr"], "n": len(recs)}
            else:
                out[sl] = dict(rates(recs, "user_weight_2", tau=tau),
                               median_du_injected=median_du(recs, "injected"), median_du_benign=median_du(recs, "benign"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--tau", type=float, default=-0.1)
    ap.add_argument("--json")
    args = ap.parse_args()
    table = {os.path.basename(r.rstrip("/")): report(r, args.tau) for r in args.runs}
    for path in args.runs:
        log_path = f"{path}/train-log.json"
        if os.path.exists(log_path):
            log = json.load(open(log_path))
            print(os.path.basename(path.rstrip("/")), {k: log.get(k) for k in ("params", "steps_done", "tokens_seen", "best_step",
                                                                   "validation_loss", "trace_validation_loss")})
    for run, sets in table.items():
        print(f"== {run}")
        for sl, v in sets.items():
            if "roc_auc" in v:
                auc = f"{v['roc_auc']:.3f}" if v["n_pos"] and v["n_neg"] else "n/a"
                du = "".join(f" {k} {v[f'median_du_{k}']:.3f}" for k in ("injected", "benign")
                             if v.get(f"median_du_{k}") is not None)
                print(f"  {sl:28s} AUC {auc} AP {v['ap']:.3f} TPR {v['tpr']:.3f} FPR {v['fpr']:.3f} "
                      f"(n+ {v['n_pos']}, n- {v['n_neg']}){' median dU:' + du if du else ''}")
            else:
                print(f"  {sl:28s} clean FPR results {v['fpr_results']:.3f} descriptions {v['fpr_descriptions']:.3f} (n {v['n']})")
    if args.json:
        # NaN (a slice with one class only) is not JSON: null instead.
        clean = lambda v: {k: clean(x) for k, x in v.items()} if isinstance(v, dict) else (None if v != v else v)
        json.dump(clean(table), open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()

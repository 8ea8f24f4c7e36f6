"""The table of rule.md: each run's guard on the choice halves and the reading probe, side by side.

    python3 compare.py cpu-ctl cpu-names        (reads <run>-<set>.summary.json and <run>-probe.txt here)
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ("mcp-choose", "broad-validation", "asb-choose", "gen-val")
UNSEEN = SETS[:3]


def summary(run, s):
    p = os.path.join(HERE, f"{run}-{s}.summary.json")
    return json.load(open(p)) if os.path.exists(p) else None


def probe(run):
    p = os.path.join(HERE, f"{run}-probe.txt")
    if not os.path.exists(p):
        return None
    rows = [line.split() for line in open(p) if " clean-twin-desc " in line]
    col = lambda name: [float(r[r.index(name) + 1]) for r in rows]
    q = lambda xs: statistics.quantiles(xs, n=4) if len(xs) > 1 else [float("nan")] * 3
    return {k: q(col(k)) for k in ("whole", "clean-twin-desc", "bare")} | {"n": len(rows)}


runs = sys.argv[1:]
print("| run | " + " | ".join(SETS) + " | mean ROC-AUC, unseen tools | description LOO ROC-AUC, mcp-choose |")
print("| --- |" + " --- |" * (len(SETS) + 2))
for run in runs:
    cells, aucs = [], []
    for s in SETS:
        d = summary(run, s)
        if d is None:
            cells.append("-")
            continue
        cells.append(f"{d['roc_auc']:.3f} ({d['tpr']:.2f} / {d['fpr']:.2f}, TPR@5% {d['tpr_at_5pct_fpr']:.2f}, n {d['n']})")
        if s in UNSEEN:
            aucs.append(d["roc_auc"])
    mc = summary(run, "mcp-choose")
    desc = mc["methods"].get("edgearmor/description-loo", {}).get("roc_auc") if mc else None
    mean = f"{statistics.mean(aucs):.3f}" if len(aucs) == len(UNSEEN) else "-"
    print(f"| {run} | " + " | ".join(cells) + f" | {mean} | {desc:.3f} |" if desc is not None else " | - |")
print()
print("Reading probe (mcp-choose, injected cases whose poisoned tool is the called one; nats a token, quartiles):")
for run in runs:
    p = probe(run)
    if p:
        print(f"- {run} (n {p['n']}): " + "; ".join(f"{k} {v[1]:+.3f} ({v[0]:+.3f} / {v[2]:+.3f})" for k, v in p.items() if k != "n"))

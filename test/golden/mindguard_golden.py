#!/usr/bin/python3
"""Golden values for src/core/mindguard: an independent numpy implementation of MindGuard's DDG and AIR.

Run with the system interpreter (Debian numpy, no other deps):
    /usr/bin/python3 test/golden/mindguard_golden.py
It writes test/golden/mindguard-golden.json next to this script. The algorithm follows
shared/reference/mindguard.md (arXiv 2508.20412): Gaussian layer weights over l = 0..L-1 centred on L/2 and
normalised to sum 1, head pooling inside each layer, top-K columns by received attention, zero the candidates
whose normalised row entropy exceeds eps, TAE = sum of squares, AIR = w(s,t) / (w(u,t) + w(cs,t)).
Attention is rounded to float32 (what the engine hands over); all maths here is float64.
"""
import json
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- reference algorithm (vectorised, independent)

def layer_weights(L, sigma_fraction, sigma_layers):
    sigma = sigma_layers if sigma_layers is not None else sigma_fraction * L
    l = np.arange(L, dtype=np.float64)
    w = np.exp(-((l - L / 2.0) ** 2) / (2.0 * sigma ** 2))
    return w / w.sum()


def aggregate(att, opts):
    L = att.shape[0]
    w = layer_weights(L, opts["sigmaFraction"], opts["sigmaLayers"])
    a = att.astype(np.float64)
    pooled = {"mean": a.mean(axis=1), "max": a.max(axis=1), "sum": a.sum(axis=1)}[opts["headPooling"]]
    return np.tensordot(w, pooled, axes=1), w


def sink_filter(A, k, eps):
    R, C = A.shape
    sums = A.sum(axis=0)
    order = np.lexsort((np.arange(C), -sums))  # descending sum, lower column first on ties
    cand = order[: min(k, C)]
    ent = []
    for c in cand:
        col = A[:, c]
        s = col.sum()
        if R <= 1 or s <= 0:
            ent.append(0.0)
            continue
        p = col / s
        p = p[p > 0]
        ent.append(float(-(p * np.log(p)).sum() / math.log(R)))
    ent = np.array(ent)
    zeroed = np.sort(cand[ent > eps])
    F = A.copy()
    F[:, zeroed] = 0.0
    # Guard the golden data against float-order flakiness: no near-tie at the K boundary, no entropy near eps.
    if k < C:
        gap = sums[order[k - 1]] - sums[order[k]]
        assert gap > 1e-9 * max(1.0, sums[order[k - 1]]), f"near-tie at top-K boundary: {gap}"
    assert np.all(np.abs(ent - eps) > 1e-6), "candidate entropy too close to eps"
    return F, cand, ent, zeroed


def idx(ranges):
    out = set()
    for r in ranges:
        out.update(range(r["start"], r["end"]))
    return sorted(out)


def analyze(att, spans, opts):
    A, w = aggregate(att, opts)
    F, cand, ent, zeroed = sink_filter(A, opts["sinkTopK"], opts["sinkEntropyThreshold"])
    sources = [("user", idx(spans["user"]))]
    invoked_node = None
    for t in spans["tools"]:
        nid = "tool:" + t["tool"]
        if t["tool"] == spans["invokedTool"]:
            invoked_node = nid
        sources.append((nid, idx(t["ranges"])))
    for i, rr in enumerate(spans.get("toolResults", [])):
        sources.append((f"tool-result:{i}", idx(rr)))
    targets = [("target:control", "control", idx(spans["controlTarget"]))]
    if idx(spans["dataTarget"]):
        targets.append(("target:data", "data", idx(spans["dataTarget"])))

    def tae(rows, cols):
        if not rows or not cols:
            return 0.0
        return float((F[np.ix_(rows, cols)] ** 2).sum())

    edges = [{"source": s, "target": t, "weight": tae(rws, cols)} for s, cols in sources for t, _, rws in targets]
    W = {(e["source"], e["target"]): e["weight"] for e in edges}
    air = []
    for t in spans["tools"]:
        if t["tool"] == spans["invokedTool"]:
            continue
        for tid, flow, _ in targets:
            num = W[("tool:" + t["tool"], tid)]
            den = W[("user", tid)] + (W[(invoked_node, tid)] if invoked_node else 0.0)
            a = num / den if den > 0 else (math.inf if num > 0 else 0.0)
            air.append({"tool": t["tool"], "flow": flow, "air": a, "numerator": num, "denominator": den})
    worst = None
    for a in air:
        if worst is None or a["air"] > worst["air"]:
            worst = a
    detected = worst is not None and worst["air"] > opts["airThreshold"]
    by_source = [[float(F[r, cols].sum()) for _, cols in sources] for r in range(A.shape[0])]
    keep = min(opts["heatmapMaxColumns"], A.shape[1])
    expected = {
        "layerWeights": w.tolist(),
        "candidates": cand.tolist(),
        "candidateEntropies": ent.tolist(),
        "zeroed": zeroed.tolist(),
        "edges": edges,
        "air": air,
        "verdict": {
            "detected": bool(detected),
            "poisonedTool": worst["tool"] if detected else None,
            "flow": worst["flow"] if detected else None,
            "score": worst["air"] if worst else 0.0,
        },
        "heatmapBySource": by_source,
        "heatmapSources": [s for s, _ in sources],
    }
    if keep > 0:
        expected["heatmapColumns"] = [F[r, :keep].tolist() for r in range(A.shape[0])]
    return expected


# ---------------------------------------------------------------- hand-made attention tensors

DEFAULTS = {
    "sigmaFraction": 1 / 6,
    "sigmaLayers": None,
    "headPooling": "mean",
    "sinkTopK": 80,
    "sinkEntropyThreshold": 0.85,
    "airThreshold": 0.5,
    "heatmapMaxColumns": 0,
}


def r(start, end):
    return {"start": start, "end": end}


def make_attention(rng, L, H, R, C, boosts):
    """Causal softmax attention for R action rows over C columns; the action occupies the last R columns.

    boosts: list of (rows, cols, logit bonus). Column 0 (BOS) and two punctuation columns get an all-rows bonus so
    they become classic sinks: large received attention spread evenly over the rows.
    """
    ctx = C - R
    logits = rng.normal(0.0, 1.6, size=(L, H, R, C))
    logits[..., 0] += 4.0
    logits[..., 5] += 2.5
    logits[..., ctx - 1] += 2.5
    for rows, cols, bonus in boosts:
        # Middle layers carry the semantic signal (the premise of the Gaussian weighting).
        lw = np.exp(-((np.arange(L) - L / 2) ** 2) / (2 * (L / 3) ** 2))
        for ri in rows:
            for ci in cols:
                logits[:, :, ri, ci] += bonus * lw[:, None]
    for ri in range(R):
        logits[:, :, ri, ctx + ri + 1 :] = -np.inf
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    att = e / e.sum(axis=-1, keepdims=True)
    return att.astype(np.float32)


def case(name, description, rng, L, H, R, C, spans, boosts, overrides, expect):
    att = make_attention(rng, L, H, R, C, boosts)
    opts = dict(DEFAULTS, **overrides)
    expected = analyze(att, spans, opts)
    v = expected["verdict"]
    assert (v["detected"], v["poisonedTool"], v["flow"]) == expect, f"{name}: designed {expect}, got {v}"
    z = expected["zeroed"]
    assert 0 < len(z) < len(expected["candidates"]), f"{name}: the entropy filter must act on some, not all, candidates"
    assert opts["sinkTopK"] < C, f"{name}: the top-K stage must leave columns out"
    return {
        "name": name,
        "description": description,
        "dims": {"layers": L, "heads": H, "rows": R, "cols": C},
        "spans": spans,
        "options": {k: v for k, v in overrides.items()},
        # Shortest decimal that round-trips the float32: Float32Array.from() in TS recovers the same bits.
        "attention": [float(str(x)) for x in att.reshape(-1)],
        "expected": expected,
    }


def main():
    rng = np.random.default_rng(20260914)
    # Context layout shared by the first three cases (column coordinates), action = last 8 columns.
    # 0-4 system, 5-24 user, 25-49 create_directory, 50-74 read_file, 75-99 send_email, 100-111 chat glue.
    tools = [
        {"tool": "create_directory", "ranges": [r(25, 50)]},
        {"tool": "read_file", "ranges": [r(50, 75)]},
        {"tool": "send_email", "ranges": [r(75, 100)]},
    ]
    R, C = 8, 120
    control, data = [r(0, 4)], [r(5, 8)]
    ctrl_rows, data_rows = range(0, 4), range(5, 8)
    user_cols = [8, 9, 12, 15, 19]
    invoked_cols = [27, 28, 33, 40]
    cases = []

    cases.append(case(
        "a1-control-hijack",
        "read_file's description pulls the tool-choice rows although create_directory is invoked (A1).",
        rng, 3, 2, R, C,
        {"user": [r(5, 25)], "tools": tools, "invokedTool": "create_directory",
         "controlTarget": control, "dataTarget": data},
        [(ctrl_rows, [52, 53, 60, 61, 66], 4.0), (ctrl_rows, invoked_cols[:2], 1.5), (data_rows, user_cols, 3.0)],
        {}, (True, "read_file", "control"),
    ))

    cases.append(case(
        "a2-data-manipulation",
        "send_email's description pulls the argument rows of a legitimately chosen create_directory call (A2).",
        rng, 3, 2, R, C,
        {"user": [r(5, 25)], "tools": tools, "invokedTool": "create_directory",
         "controlTarget": control, "dataTarget": data},
        [(ctrl_rows, user_cols, 2.5), (ctrl_rows, invoked_cols, 3.0), (data_rows, [80, 81, 90, 91], 4.5),
         (data_rows, user_cols[:1], 1.0)],
        {}, (True, "send_email", "data"),
    ))

    cases.append(case(
        "clean",
        "Tool choice follows the user and create_directory's own description; arguments follow the user.",
        rng, 2, 2, R, C,
        {"user": [r(5, 15), r(15, 25)], "tools": tools, "invokedTool": "create_directory",
         "controlTarget": control, "dataTarget": data},
        [(ctrl_rows, user_cols, 3.0), (ctrl_rows, invoked_cols, 3.5), (data_rows, user_cols, 4.0)],
        {}, (False, None, None),
    ))

    # Unregistered invoked tool, no arguments, a tool result, and non-default options throughout.
    R4, C4 = 6, 100
    cases.append(case(
        "unregistered-tool-no-args-options",
        "The call names a tool that is not registered and has no arguments; list_files's description drives it. "
        "Max head pooling, absolute sigma, K=40, eps=0.8, tau=0.7, 16 raw heatmap columns.",
        rng, 4, 3, R4, C4,
        {"user": [r(3, 20)], "tools": [{"tool": "list_files", "ranges": [r(20, 45)]},
                                       {"tool": "get_weather", "ranges": [r(45, 70)]}],
         "toolResults": [[r(70, 90)]], "invokedTool": "delete_repo",
         "controlTarget": [r(0, 4)], "dataTarget": []},
        [(range(0, 4), [22, 23, 30, 31], 4.0), (range(0, 4), [6, 7], 2.0), (range(0, 6), [75, 76], 1.0)],
        {"headPooling": "max", "sigmaLayers": 0.8, "sinkTopK": 40, "sinkEntropyThreshold": 0.8,
         "airThreshold": 0.7, "heatmapMaxColumns": 16},
        (True, "list_files", "control"),
    ))

    out = os.path.join(HERE, "mindguard-golden.json")
    with open(out, "w") as f:
        json.dump({"generator": "test/golden/mindguard_golden.py", "numpy": np.__version__, "cases": cases}, f)
        f.write("\n")
    for c in cases:
        e = c["expected"]
        print(c["name"], e["verdict"], "zeroed", len(e["zeroed"]), "of", len(e["candidates"]),
              "air", [(a["tool"], a["flow"], round(a["air"], 4)) for a in e["air"]])


if __name__ == "__main__":
    main()

"""The unseen-domain protocol for `edgearmor adapt` (issue 31): one held-out tool family's whole
conversations split by conversation into the user's traffic (attack-free, what adapt learns from) and
an evaluation half (every real call as a benign check, plus injections planted with the held-out
phrasing families of the family's split, followed and ignored).

    /usr/bin/python3 lab/eval/adapt_protocol.py --family Movies --out lab/eval/results/adapt-movies
    npx edgearmor adapt lab/eval/results/adapt-movies/traffic.jsonl --families train --out lab/runs/adapted-movies
    npx edgearmor eval lab/eval/results/adapt-movies/eval.jsonl --baselines none --out lab/eval/results/adapt-movies/base
    npx edgearmor eval lab/eval/results/adapt-movies/eval.jsonl --baselines none --model lab/runs/adapted-movies \\
        --out lab/eval/results/adapt-movies/adapted
    /usr/bin/python3 lab/eval/adapt_protocol.py --summarize lab/eval/results/adapt-movies

Only SGD has whole held-out conversations with real tool results: its one held-out service family with
single-family dialogues is Movies (a validation family of model/corpus.py, so a choosing number); no
test-split family has whole dialogues in the shared data.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "model"))
import corpus  # noqa: E402

KINDS = [("tool_result_injection", 0.4), ("ignored_injection", 0.2), ("tool_poisoning", 0.2), ("ignored_poisoning", 0.2)]


def build(args) -> None:
    rng = random.Random(args.seed)
    split = corpus.split_of("sgd:" + args.family)
    if split == "train":
        sys.exit(f"{args.family} is a training family of the broad corpus: pick a held-out one")
    sgd = [r for r in corpus.read_jsonl(f"{args.datasets}/sgd/dialogues.jsonl.xz")
           if {s.split("_")[0] for s in r["services"]} == {args.family}]
    rng.shuffle(sgd)
    half = len(sgd) // 2
    traffic, held = sgd[:half][: args.traffic], sgd[half:][: args.eval_conversations]
    os.makedirs(args.out, exist_ok=True)
    tools_of = lambda r: [corpus.clean_tool(t) for t in r["tools"]]
    with open(f"{args.out}/traffic.jsonl", "w") as f:
        for r in traffic:
            f.write(json.dumps({"id": r["id"], "messages": r["messages"], "tools": tools_of(r)}, ensure_ascii=False) + "\n")
    cat = corpus.Catalogue(args.datasets, args.source_limit)
    attacks = corpus.families(split)
    out = []
    for r in held:
        msgs = r["messages"]
        sites = [k for k, m in enumerate(msgs) if m.get("tool_calls") and any(x["role"] == "user" for x in msgs[:k])]
        for k in sites:  # every real call: a benign check of an attack-free conversation
            call = msgs[k]["tool_calls"][0]
            action = {"name": call["name"], "arguments": call.get("arguments") or {}}
            out.append({"id": f"{r['id']}-real-{k}", "conversation": r["id"], "label": "benign", "kind": "benign", "real": True,
                        "messages": msgs[:k], "tools": tools_of(r), "action": action, "suite": f"sgd:{args.family}"})
        after = [k for k in sites if any(x["role"] == "tool" for x in msgs[:k])]
        for k in rng.sample(after, min(len(after), args.planted_per_conversation)):
            base = (split, "sgd:" + args.family, msgs[:k], msgs[k]["tool_calls"][0], tools_of(r), "sgd")
            kind = rng.choices([x for x, _ in KINDS], [w for _, w in KINDS])[0]
            c = corpus.make_case(rng, cat, base, kind, len(out), attacks)
            if c is not None:
                c.update(id=f"{r['id']}-{kind}-{k}", conversation=r["id"], suite=f"sgd:{args.family}", real=False)
                out.append(c)
    with open(f"{args.out}/eval.jsonl", "w") as f:
        for c in out:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    labels = {}
    for c in out:
        labels[c["kind"]] = labels.get(c["kind"], 0) + 1
    print(f"{args.family} ({split}): {len(traffic)} traffic conversations, {len(held)} evaluation conversations, "
          f"{len(out)} checks {labels} -> {args.out}", file=sys.stderr)


def summarize(path: str) -> None:
    cases = {}
    with open(f"{path}/eval.jsonl") as f:
        for line in f:
            c = json.loads(line)
            cases[c["id"]] = c
    rows = {}
    for name in ("base", "adapted"):
        if not os.path.exists(f"{path}/{name}/results.json"):
            continue
        res = json.load(open(f"{path}/{name}/results.json"))
        blocked = {rec["id"]: bool(rec["results"]["edgearmor"]["detected"]) for rec in res["cases"]}
        inj = [i for i, c in cases.items() if c["label"] == "injected"]
        ben = [i for i, c in cases.items() if c["label"] == "benign"]
        real = [i for i in ben if cases[i].get("real")]
        convs = {}
        for i in real:
            convs[cases[i]["conversation"]] = convs.get(cases[i]["conversation"], False) or blocked.get(i, False)
        r = lambda ids: sum(blocked.get(i, False) for i in ids) / max(1, len(ids))
        rows[name] = {"tpr": r(inj), "fpr": r(ben), "real_fpr": r(real), "conversation_fpr": sum(convs.values()) / max(1, len(convs)),
                      "injected": len(inj), "benign": len(ben), "real": len(real), "conversations": len(convs)}
    print(json.dumps(rows, indent=1))
    with open(f"{path}/summary-protocol.json", "w") as f:
        json.dump(rows, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="Movies")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--traffic", type=int, default=750, help="most traffic conversations")
    ap.add_argument("--eval-conversations", type=int, default=150)
    ap.add_argument("--planted-per-conversation", type=int, default=2)
    ap.add_argument("--source-limit", type=int, default=2000, help="dialogues read per source for the tool catalogue")
    ap.add_argument("--summarize", metavar="DIR", help="per-call and per-conversation rates from the two eval runs in DIR")
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
    else:
        if not args.out:
            ap.error("--out is required")
        build(args)


if __name__ == "__main__":
    main()

"""The flow rules of docs/options.md ("The flow a verdict reports"), simulated on an eval run with the floors off,
with each injected description attack's poisoned tool taken as the source:

    python3 flow_sim.py RESULTS.json SET.jsonl

The expected flow is the case's `expected_flow` (the MCP set) or its attack type (A1 control, A2 data).
"""
import json
import sys
from collections import Counter

MIN_CHARS = 4  # src/core/tool-poisoning.ts MIN_QUOTED_VALUE_CHARS


def leaves(v):
    if isinstance(v, dict):
        return [x for y in v.values() for x in leaves(y)]
    if isinstance(v, list):
        return [x for y in v for x in leaves(y)]
    return [] if isinstance(v, bool) or v is None else [str(v).strip().lower()]


def rows(results: str, cases: str) -> list[dict]:
    src = {json.loads(line)["id"]: json.loads(line) for line in open(cases)}
    out = []
    for c in json.load(open(results))["cases"]:
        sc = src[c["id"]]
        if c["label"] != "injected" or not sc.get("poisoned_tool"):
            continue
        descs = (c["results"].get("edgearmor/description-loo") or {}).get("descriptions") or []
        p = next((t for t in descs if t["tool"] == sc["poisoned_tool"]), None)
        if p is None:
            continue
        act = sc["action"]
        tool = next(t for t in sc["tools"] if t["name"] == sc["poisoned_tool"])
        definition = f"{tool.get('description') or ''}\n{json.dumps(tool.get('parameters') or {})}".lower()
        user = " ".join(m["content"] or "" for m in sc["messages"] if m["role"] == "user").lower()
        values = [[x for x in leaves(v) if len(x) >= MIN_CHARS] for v in (act["arguments"] or {}).values()]
        values = [v for v in values if v]
        quoted = [any(x in definition for x in v) for v in values]
        typed = [any(x in user for x in v) for v in values]
        out.append({
            "own": sc["poisoned_tool"] == act["name"],
            "expected": sc.get("expected_flow") or {"A1": "control", "A2": "data"}[sc["attack"]["type"]],
            "name": p.get("nameDelta") or 0, "arguments": p.get("argumentsDelta") or 0,
            "untyped": any(q and not t for q, t in zip(quoted, typed)), "every": all(quoted), "typed": any(typed),
            "type": f"{sc.get('attack_type') or sc['attack']['style']} {sc['attack']['type']}",
        })
    return out


def own_by_quote(r):
    return "data" if r["untyped"] else "control"


RULES = {
    "part deltas; always control (before)":
        lambda r: "control" if not r["own"] or r["name"] > max(0, r["arguments"]) else "data",
    "untyped quote; always control": lambda r: own_by_quote(r) if r["own"] else "control",
    "untyped quote; untyped quote": own_by_quote,
    **{f"untyped quote; name delta over {t}": (lambda t: lambda r: own_by_quote(r) if r["own"] else
                                               "control" if r["name"] > t else "data")(t) for t in (0, 0.05, 0.1, 0.2, 0.5)},
    "untyped quote; typed value means data": lambda r: own_by_quote(r) if r["own"] else "data" if r["typed"] else "control",
    "untyped quote; every value quoted (shipped)": lambda r: own_by_quote(r) if r["own"] else "control" if r["every"] else "data",
}

if __name__ == "__main__":
    data = rows(sys.argv[1], sys.argv[2])
    for name, rule in RULES.items():
        ok = sum(rule(r) == r["expected"] for r in data)
        wrong = Counter(r["type"] for r in data if rule(r) != r["expected"])
        print(f"{name:48s} {ok}/{len(data)} = {ok / len(data):.2f}  wrong: {dict(wrong)}")

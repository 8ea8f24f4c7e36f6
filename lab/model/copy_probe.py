"""How well a proxy copies values from its context into the call: the measure behind data.copy_drill.

For every case whose action carries a string argument (6+ characters) that appears verbatim in a tool
result, the full context's log-probs of that value's tokens after its first (the first has to be chosen;
the rest only copied) are averaged. A proxy that copies puts them near 0 nats; one that does not pays
several nats a token, and then removing the result that carries the value barely changes the call's
likelihood, which is the leave-one-out signal for parameter-manipulation attacks (A2) and for the guard's
benign copies alike. Also printed: the same value tokens' mean log-prob with that tool result removed.

    /usr/bin/python3 lab/model/copy_probe.py --run lab/runs/edgearmor-proxy --cases data/test.jsonl [--limit N]
"""
from __future__ import annotations

import argparse
import os
import sys
import json

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "model"))  # the shipped modules
from bpe import Tokenizer  # noqa: E402
from chat_format import call_json  # noqa: E402
from data import load_jsonl, value_spans  # noqa: E402
from export_onnx import load  # noqa: E402
from score_loo import score_case  # noqa: E402


def copied_value_tokens(tok: Tokenizer, case: dict) -> tuple[list[int], int | None]:
    """Indexes of the action's tokens that continue a copied value, and the tool message it is copied from."""
    action = case["action"]
    text = call_json(action["name"], action.get("arguments", {}))
    results = [(i, m.get("content") or "") for i, m in enumerate(case["messages"]) if m["role"] == "tool"]
    data = text.encode("utf-8")
    starts = []
    for a, b in value_spans(text):
        value = json.loads(text[a:b]) if text[a] == '"' else None
        if not isinstance(value, str) or len(value) < 6:
            continue
        source = next((i for i, content in results if value in content), None)
        if source is not None:
            starts.append((len(text[:a + 1].encode("utf-8")), len(text[:b - 1].encode("utf-8")), source))
    picked, source, pos = [], None, 0
    first_seen: set[int] = set()
    for k, t in enumerate(tok.encode_text(text)):
        n = tok.token_byte_length(t)
        for j, (ba, bb, src) in enumerate(starts):
            if pos < bb and pos + n > ba:
                if j in first_seen:
                    picked.append(k)
                    source = src
                first_seen.add(j)
                break
        pos += n
    assert pos == len(data)
    return picked, source


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = load(args.run).to(args.device)
    tok = Tokenizer.load(f"{args.run}/tokenizer.json")
    full, ablated, n_cases = [], [], 0
    for case in load_jsonl(args.cases, args.limit):
        picked, source = copied_value_tokens(tok, case)
        if not picked:
            continue
        res = score_case(model, tok, case, model.cfg.max_position_embeddings, False, args.device)
        by = {r["variant"]: r["token_logprobs"] for r in res["variants"]}
        full += [by["full"][k] for k in picked]
        ablated += [by[f"no-span:{source}"][k] for k in picked]
        n_cases += 1
    mean = lambda xs: sum(xs) / max(1, len(xs))
    print(json.dumps({"cases": n_cases, "tokens": len(full), "mean_logprob_full": round(mean(full), 3),
                      "mean_logprob_without_source": round(mean(ablated), 3),
                      "share_above_half": round(mean([1.0 if x > -0.693 else 0.0 for x in full]), 3)}))


if __name__ == "__main__":
    main()

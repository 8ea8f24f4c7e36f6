"""Plain leave-one-out attribution with a trained proxy, in PyTorch: the numbers the model card
reports and the TypeScript engine must reproduce.

For each guard case: log P(action | variant) for the full context, the context without the user's
request (all user turns), without each tool result, and (for tool poisoning) without each tool's
description; assistant text after the first tool result is masked before scoring (cot-propagation).
Deltas are normalised by the real number of scored action tokens.

    /usr/bin/python3 lab/model/score_loo.py --run lab/runs/edgearmor-proxy --cases data/test.jsonl
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import json
import os
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "model"))  # the shipped modules
from bpe import Tokenizer  # noqa: E402
from chat_format import call_json, segments  # noqa: E402
from data import REDACTION_TEXT, load_jsonl  # noqa: E402
from export_onnx import load  # noqa: E402


def mask_cot(messages):
    first = next((i for i, m in enumerate(messages) if m["role"] == "tool"), None)
    if first is None:
        return messages
    return [dict(m, content=REDACTION_TEXT) if i > first and m["role"] == "assistant" and m.get("content") else m
            for i, m in enumerate(messages)]


def variants(case, tool_loo: bool):
    msgs = mask_cot(case["messages"])
    tools = case.get("tools") or []
    users = {i for i, m in enumerate(msgs) if m["role"] == "user"}
    out = [("full", msgs, tools), ("no-user", [m for i, m in enumerate(msgs) if i not in users], tools)]
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            out.append((f"no-span:{i}", [x for j, x in enumerate(msgs) if j != i], tools))
    if tool_loo:
        for t in tools:
            out.append((f"no-tool:{t['name']}", msgs, [x for x in tools if x is not t]))
    return out


def action_parts(tok: Tokenizer, action) -> tuple[list[int], int]:
    """Action token ids and how many of them cover `{"name": "<name>"` (the control-flow part)."""
    text = call_json(action["name"], action.get("arguments", {}))
    ids = tok.encode_text(text)
    name_end = len(('{"name": ' + json.dumps(action["name"], ensure_ascii=False)).encode("utf-8"))
    pos, n_name = 0, 0
    for t in ids:
        if pos < name_end:
            n_name += 1
        pos += tok.token_byte_length(t)
    return ids, n_name


def prompt_ids(tok, msgs, tools, max_len, n_action):
    segs = segments(msgs, tools) + [("s", "<|assistant|>"), ("s", "<|call|>")]
    ids = tok.encode_segments(segs)
    budget = max_len - n_action
    if len(ids) > budget and tools:
        ids = tok.encode_segments(segments(msgs, None) + [("s", "<|assistant|>"), ("s", "<|call|>")])
    if len(ids) > budget:
        # Keep the head (system + first user turn) and the tail; the engine's policy is finer-grained.
        head = budget // 4
        ids = ids[:head] + ids[len(ids) - (budget - head):]
    return ids


@torch.no_grad()
def score_case(model, tok, case, max_len, tool_loo, device="cpu"):
    act, n_name = action_parts(tok, case["action"])
    rows = []
    vs = variants(case, tool_loo)
    seqs = [prompt_ids(tok, m, t, max_len, len(act)) + act for _, m, t in vs]
    n = max(map(len, seqs))
    ids = torch.full((len(seqs), n), tok.special["<|pad|>"], dtype=torch.long)
    am = torch.zeros_like(ids)
    pos = torch.zeros_like(ids)
    for r, s in enumerate(seqs):
        ids[r, n - len(s):] = torch.tensor(s)  # left padding, as the engine does
        am[r, n - len(s):] = 1
        pos[r, n - len(s):] = torch.arange(len(s))
    # Rows in chunks, so that one chunk's attention scores stay near 2^28 numbers: four scorers at a
    # 4,096-token window ran one H100 out of memory with every variant in one batch (gpu-trials.md).
    per_chunk = max(1, 2**28 // (model.cfg.num_attention_heads * n * n))
    lp = torch.cat([F.log_softmax(model(ids[i:i + per_chunk].to(device), am[i:i + per_chunk].to(device),
                                        pos[i:i + per_chunk].to(device), logits_to_keep=len(act) + 1)[0][:, :-1].float(),
                                  dim=-1).cpu() for i in range(0, len(seqs), per_chunk)])
    tgt = torch.tensor(act).unsqueeze(0).expand(len(seqs), -1)
    tok_lp = lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)  # [variants, n_action]
    for (name, _, _), row in zip(vs, tok_lp):
        rows.append({"variant": name, "logprob": row.sum().item(), "name_logprob": row[:n_name].sum().item(),
                     "args_logprob": row[n_name:].sum().item(), "token_logprobs": row.tolist()})
    return {"n_action": len(act), "n_name": n_name, "variants": rows}


def deltas(res):
    v = {r["variant"]: r for r in res["variants"]}
    full = v["full"]
    n, nn_, na = res["n_action"], max(1, res["n_name"]), max(1, res["n_action"] - res["n_name"])
    d = lambda k, part="logprob", denom=n: (full[part] - v[k][part]) / denom
    spans = {k: {"d": d(k), "d_name": d(k, "name_logprob", nn_), "d_args": d(k, "args_logprob", na)}
             for k in v if k.startswith("no-span:")}
    tools = {k: {"d": d(k), "d_name": d(k, "name_logprob", nn_), "d_args": d(k, "args_logprob", na)}
             for k in v if k.startswith("no-tool:")}
    user = {"d": d("no-user"), "d_name": d("no-user", "name_logprob", nn_), "d_args": d("no-user", "args_logprob", na)}
    return user, spans, tools


def source_of(cases_path: str, limit, tool_loo: bool) -> dict:
    """What a score file was made from: the cases file's bytes, the limit and the tool flag. A score file is kept
    (resumed) only when its source matches, so one left by another data set or limit (a rehearsal at a tiny size)
    is scored again rather than read as this set's."""
    with open(cases_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {"cases_sha256": digest, "limit": limit, "tools": tool_loo}


def kept(out_path: str, source: dict) -> bool:
    try:
        with open(out_path + ".source.json") as f:
            return os.path.exists(out_path) and json.load(f) == source
    except (OSError, ValueError):
        return False


def score_file(model, tok, max_len, cases_path, out_path, limit, tool_loo, device, source=None):
    cases = load_jsonl(cases_path, limit)
    t0 = time.time()
    # Written under a temporary name and renamed when complete: a file that exists is whole.
    out = open(out_path + ".part", "w") if out_path else None
    for i, c in enumerate(cases):
        res = score_case(model, tok, c, max_len, tool_loo, device)
        user, spans, tools = deltas(res)
        rec = {"id": c.get("id"), "label": c.get("label"), "kind": c.get("kind"), "attack": c.get("attack"),
               "injected_in": c.get("injected_in"), "poisoned_tool": c.get("poisoned_tool"),
               "suite": c.get("suite"), "user": user, "spans": spans, "tools": tools, "n_action": res["n_action"]}
        if out:
            out.write(json.dumps(rec) + "\n")
        if (i + 1) % 100 == 0:
            print(f"{cases_path}: {i + 1}/{len(cases)} {time.time() - t0:.0f}s", flush=True)
    if out:
        out.close()
        os.replace(out_path + ".part", out_path)
        with open(out_path + ".source.json", "w") as f:
            json.dump(source or source_of(cases_path, limit, tool_loo), f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="lab/runs/edgearmor-proxy")
    ap.add_argument("--cases", default="data/test.jsonl")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=None, help="write per-case scores as JSON Lines")
    ap.add_argument("--tool-loo", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sets", nargs="*", default=None, metavar="CASES=OUT[:LIMIT][:tools]",
                    help="score several files with one model load instead of --cases/--out; an OUT made from the "
                         "same cases, limit and flag is kept (resuming), ':tools' adds leave-one-out over tool "
                         "descriptions")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = load(args.run).to(args.device)
    tok = Tokenizer.load(f"{args.run}/tokenizer.json")
    max_len = model.cfg.max_position_embeddings
    if args.sets is None:
        score_file(model, tok, max_len, args.cases, args.out, args.limit, args.tool_loo, args.device)
        return
    for spec in args.sets:
        cases_path, rest = spec.split("=", 1)
        out_path, *opts = rest.split(":")
        limit = next((int(o) for o in opts if o.isdigit()), args.limit)
        source = source_of(cases_path, limit, "tools" in opts)
        if kept(out_path, source):
            continue
        score_file(model, tok, max_len, cases_path, out_path, limit, "tools" in opts, args.device, source)


if __name__ == "__main__":
    main()

"""Long tool results for training: filler sentences around one result, up to what the proxy's window holds.

A result padded to the input limit reaches the proxy as the window cut keeps it: the sentences that name the
call, their surroundings, and the head and tail of the filler, up to the window's budget (src/core/sentence-cut.ts). The proxy trained on
short results only reads such a window badly (docs/evaluation.md, "Padding up to the input limit"): the filler
alone lowers the call's likelihood below no result at all, so removing the whole result moves the call the
wrong way and the leave-one-out rule cannot see the injection, and the user's request no longer chooses among
the listed values. `pad_case` writes that window's shape into training conversations (both labels), so
the counterfactuals (data.counterfactuals, data.request_counterfactual) teach what drives a call inside one.

The filler is GSM8K's train-split word problems (MIT, ../shared/datasets/gsm8k): plain narrative sentences,
none of the sentences the guard's own padding rewrites use (src/eval/rewrites.ts), so the padded evaluation
sets stay unseen. Standard library only (tested by model/test_padding.py).
"""
from __future__ import annotations

import json
import lzma
import random
import re

from bpe import Tokenizer
from data import encode_case

# The tokens a padded conversation leaves free below max_len (the chat format's own tokens, rounding).
SLACK_TOKENS = 16
# Below this much room a conversation is left as it is: a few sentences of filler are not a long result.
MIN_ROOM_TOKENS = 64


def filler_sentences(path: str) -> list[str]:
    """The sentences of GSM8K's train-split questions (never its test split), without the questions
    themselves (the last sentence of each, which asks for a number)."""
    out = []
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("split") != "train":
                continue
            sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", rec["question"]) if s.strip()]
            out += [s for s in sentences[:-1] if s.endswith(".") and 20 <= len(s) <= 200]
    if not out:
        raise ValueError(f"{path} holds no GSM8K train-split sentences to pad with")
    return out


def padded_message(case: dict) -> int | None:
    """The tool result a padding goes around: the one that drives an injected call, else the last result."""
    msgs = case["messages"]
    driver = case.get("driver") or {}
    i = driver.get("message_index")
    if driver.get("kind") == "tool_result" and isinstance(i, int) and 0 <= i < len(msgs) and msgs[i]["role"] == "tool":
        return i
    return next((k for k in range(len(msgs) - 1, -1, -1) if msgs[k]["role"] == "tool"), None)


def encoded_length(tok: Tokenizer, case: dict) -> int:
    """Tokens of the case encoded whole (no cut) with its tool list; encode_case draws nothing then."""
    return len(encode_case(tok, case, 10 ** 9, random.Random(0), True, False).ids)


def pad_case(tok: Tokenizer, case: dict, rng: random.Random, filler: list[str], max_len: int) -> dict | None:
    """The case with filler around one tool result (padded_message), or None when it has none or its window
    has too little room left (below max_len, the case encoded whole with its tool list). The filler fills
    between half and all of the room; it goes all before the result, all after it, or split at random (the
    evaluation's padding rewrites put it around or before), a third each."""
    i = padded_message(case)
    if i is None:
        return None
    room = max_len - encoded_length(tok, case) - SLACK_TOKENS
    if room < MIN_ROOM_TOKENS:
        return None
    budget = int(room * rng.uniform(0.5, 1.0))
    drawn, used = [], 0
    while True:
        s = rng.choice(filler)
        n = len(tok.encode_text(" " + s))
        if used + n > budget:
            break
        drawn.append(s)
        used += n
    if not drawn:
        return None
    place = rng.randrange(3)
    cut = 0 if place == 0 else len(drawn) if place == 1 else rng.randint(0, len(drawn))
    before, after = " ".join(drawn[:cut]), " ".join(drawn[cut:])
    msgs = [dict(m) for m in case["messages"]]
    msgs[i]["content"] = "\n".join(p for p in (before, msgs[i].get("content") or "", after) if p)
    return dict(case, messages=msgs)

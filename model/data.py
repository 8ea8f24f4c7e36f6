"""Training data: generator conversations and AgentDojo training traces, as token sequences.

Every sequence is the proxy's chat format (chat_format.py) with a loss weight per token: the
agent's own turns (reasoning and calls) weigh 1, the rest (system prompt, tools, user, tool results)
CONTEXT_WEIGHT, so the small model spends its capacity on what it is asked to score.
"""
from __future__ import annotations

import json
import lzma
import random
from dataclasses import dataclass

from bpe import Tokenizer
from chat_format import argument_values, call_json, segments

CONTEXT_WEIGHT = 0.25
REDACTION_TEXT = "[Reasoning redacted]"
# Per-token weight of the unlikelihood term on a request counterfactual's action values.
UNLIKELY_WEIGHT = 1.0


@dataclass
class Example:
    ids: list[int]
    weights: list[float]
    # Unlikelihood weights: train -log(1 - p) on these tokens (request counterfactuals), else None.
    unlikely: list[float] | None = None


def load_jsonl(path: str, limit: int | None = None) -> list[dict]:
    """Reads JSON Lines, xz-compressed when the name ends in .xz."""
    out = []
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
                if limit is not None and len(out) >= limit:
                    break
    return out


def encode_case(tok: Tokenizer, case: dict, max_len: int, rng: random.Random, with_tools: bool,
                redact_cot: bool) -> Example | None:
    """Encode one conversation; truncate with the engine's policy when it is longer than max_len.

    Policy (same as the TypeScript engine's): drop tool definitions first, then the oldest messages
    after the first user turn, then cut the middle of the longest remaining tool result. The system
    prompt, user turns and the final agent turn are never dropped.
    """
    msgs = case["messages"]
    if redact_cot:
        first_tool = next((i for i, m in enumerate(msgs) if m["role"] == "tool"), None)
        if first_tool is not None:
            msgs = [dict(m, content=REDACTION_TEXT) if (i > first_tool and m["role"] == "assistant" and m.get("content"))
                    else m for i, m in enumerate(msgs)]
    groups = []
    if with_tools:
        for t in case.get("tools") or []:
            groups.append(["tool_def", segments([], [t])[1:]])
    for m in msgs:
        groups.append([m["role"], segments([m])[1:]])
    if case.get("action"):
        groups.append(["action", segments([], None, case["action"])[1:]])
    enc = [[role, [tok.encode_segments([s]) for s in segs], segs] for role, segs in groups]

    def total() -> int:
        return 1 + sum(len(x) for _, parts, _ in enc for x in parts)

    # Like the guard's windows, a client too long for the window keeps the called tool's definition and the
    # poisoned one (what drove the call) and as many others as fit, drawn at random; only then does it drop them
    # all. Dropping every definition of a 10-30-tool client never taught the proxy to read descriptions at all.
    keep_tools = {name for name in ((case.get("action") or {}).get("name"), case.get("poisoned_tool")) if name}
    keep_tools |= set(case.get("keep_tools") or [])
    tool_names = [t.get("name") for t in (case.get("tools") or [])] if with_tools else []
    defs = [i for i, e in enumerate(enc) if e[0] == "tool_def"]
    if total() > max_len and len(defs) > 1:
        optional = [i for i in defs if tool_names[i] not in keep_tools]
        rng.shuffle(optional)
        drop: set[int] = set()
        over = total() - max_len
        for i in optional:
            if over <= 0:
                break
            drop.add(i)
            over -= sum(len(x) for x in enc[i][1])
        enc = [e for i, e in enumerate(enc) if i not in drop]
    while total() > max_len and any(r == "tool_def" for r, _, _ in enc):
        enc = [e for e in enc if e[0] != "tool_def"]
    first_user = next((i for i, e in enumerate(enc) if e[0] == "user"), 0)
    while total() > max_len:
        droppable = [i for i in range(first_user + 1, len(enc) - 2) if enc[i][0] not in ("user", "system")]
        if not droppable:
            break
        i = droppable[0]
        # Keep a call and its results together: drop an assistant turn with the tool turns after it.
        j = i + 1
        if enc[i][0] == "assistant":
            while j < len(enc) - 1 and enc[j][0] == "tool":
                j += 1
        del enc[i:j]
    while total() > max_len:
        over = total() - max_len
        best = max(((i, k) for i, e in enumerate(enc) for k in range(len(e[1])) if e[2][k][0] == "t"),
                   key=lambda ik: len(enc[ik[0]][1][ik[1]]), default=None)
        if best is None or len(enc[best[0]][1][best[1]]) <= over + 16:
            return None
        i, k = best
        ids = enc[i][1][k]
        keep = len(ids) - over
        enc[i][1][k] = ids[: keep // 2] + ids[len(ids) - (keep - keep // 2):]
    # A request counterfactual trains only that its action is unlikely: nothing else in it is new.
    unlikely_action = bool(case.get("unlikely_action"))
    ids = [tok.special["<|bos|>"]]
    weights = [0.0]
    for role, parts, _ in enc:
        w = 0.0 if unlikely_action else 1.0 if role in ("assistant", "action") else CONTEXT_WEIGHT
        for p in parts:
            ids += p
            weights += [w] * len(p)
    if not unlikely_action:
        return Example(ids, weights)
    action = case["action"]
    marks = value_token_marks(tok, call_json(action["name"], action.get("arguments", {})))
    # The action group ends <|call|> json <|end|>: its JSON tokens are the len(marks) ids before the last.
    unlikely = [0.0] * (len(ids) - 1 - len(marks)) + [UNLIKELY_WEIGHT * m for m in marks] + [0.0]
    return Example(ids, weights, unlikely)


def _segment_tokens(tok: Tokenizer, segs) -> int:
    return sum(len(tok.encode_segments([seg])) for seg in segs)


def call_windows(tok: Tokenizer, case: dict, max_len: int, margin: int = 16) -> list[dict]:
    """A conversation too long for the window as the windows that cover its calls, each ending with an agent turn
    that makes calls and holding what precedes it.

    Truncating a long conversation whole keeps its last window and loses every earlier call. Instead: from the
    last turn with calls backwards, a window takes the turns before it while they fit (after the system prompt and
    the first user turn, which every window keeps), then the next window ends at the latest call turn before it,
    until every call turn is in one. Each window keeps the definitions of the tools its calls use (`keep_tools`:
    encode_case drops the others first). A conversation that fits is returned as it is.
    """
    msgs = case["messages"]
    sizes = [_segment_tokens(tok, segments([m])[1:]) for m in msgs]
    tool_sizes = {t.get("name"): _segment_tokens(tok, segments([], [t])[1:]) for t in case.get("tools") or []}
    if 1 + sum(sizes) + sum(tool_sizes.values()) <= max_len:
        return [case]
    first_user = next((i for i, m in enumerate(msgs) if m["role"] == "user"), -1)
    head = [i for i in range(first_user + 1) if msgs[i]["role"] in ("system", "user")]
    head_tokens = 1 + sum(sizes[i] for i in head)
    call_turns = [i for i, m in enumerate(msgs) if i > first_user and m["role"] == "assistant" and m.get("tool_calls")]
    windows = []
    end = call_turns[-1] if call_turns else None
    while end is not None:
        called = set()
        used = head_tokens + margin
        start = end + 1
        while start - 1 > first_user:
            i = start - 1
            names = {c["name"] for c in msgs[i].get("tool_calls") or []} if msgs[i]["role"] == "assistant" else set()
            extra = sizes[i] + sum(tool_sizes.get(n, 0) for n in names - called)
            if start <= end and used + extra > max_len:
                break
            used += extra
            called |= names
            start = i
        windows.append(dict(case, messages=[msgs[i] for i in head] + msgs[start:end + 1], keep_tools=sorted(called)))
        end = next((i for i in reversed(call_turns) if i < start), None)
    windows.reverse()
    return windows


def copy_drill(rng: random.Random, first_id: int, vocab_size: int, bos_id: int) -> Example:
    """Random tokens, filler, then the same tokens again, trained on the repeat only (after its first token).

    No memorising predicts a random string: only copying it from the context does, which is what an agent
    does with an IBAN or an id it read in a tool result. The proxy trained without these barely copies
    values it has not seen in training (test-split IBANs cost ~10 nats a token even in the full context),
    so removing the result that carries them hardly changes their likelihood.
    """
    draw = lambda n: [rng.randrange(first_id, vocab_size) for _ in range(n)]
    value, before, between = draw(rng.randint(8, 40)), draw(rng.randint(0, 200)), draw(rng.randint(0, 100))
    ids = [bos_id] + before + value + between + value
    weights = [0.0] * (len(ids) - len(value) + 1) + [1.0] * (len(value) - 1)
    return Example(ids, weights)


def strip_context(case: dict) -> dict:
    """The case without its system prompt and tool list, as a guard sees calls from agents that pass neither
    (the browser extension's page reader); kept whole when a tool description is what drives the call."""
    if (case.get("driver") or {}).get("kind") == "tool_description":
        return case
    return dict(case, messages=[m for m in case["messages"] if m["role"] != "system"], tools=[])


def value_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the values in a JSON text (strings, numbers, literals that are not keys)."""
    spans, stack, i, prev = [], [], 0, ""
    while i < len(text):
        c = text[i]
        if c in " \t\n\r":
            i += 1
            continue
        if c in "{[":
            stack.append(c)
        elif c in "}]":
            stack.pop()
        if c in "{[}],:":
            prev = c
            i += 1
            continue
        # A scalar: a key when it sits in an object after '{' or ','; a value otherwise.
        is_key = bool(stack) and stack[-1] == "{" and prev in "{,"
        j = i
        if c == '"':
            j += 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            while j < len(text) and text[j] not in ",}] \t\n\r":
                j += 1
        if not is_key:
            spans.append((i, j))
        prev = "v"
        i = j
    return spans


def value_token_marks(tok: Tokenizer, text: str) -> list[int]:
    """1 for each token of `text` that overlaps a JSON value (the tool name, argument values), 0
    for structure and keys, which any call has and an unlikelihood target should not push down."""
    ids = tok.encode_text(text)
    data = text.encode("utf-8")
    covered = bytearray(len(data))
    for a, b in value_spans(text):
        ba, bb = len(text[:a].encode("utf-8")), len(text[:b].encode("utf-8"))
        for k in range(ba, bb):
            covered[k] = data[k] != ord('"')
    marks, pos = [], 0
    for t in ids:
        n = tok.token_byte_length(t)
        marks.append(1 if any(covered[pos:pos + n]) else 0)
        pos += n
    return marks


def counterfactuals(case: dict) -> list[dict]:
    """Ablated copies of an attacked generator case, labelled with what the agent would do then.

    The guard scores the action under ablations the training data never shows (no user turn, no
    injected result, no poisoned description). These copies teach the causal story the attribution
    relies on, with targets the generator knows exactly:
    - the user's turns removed: an agent that follows an injection still does (the injection, not
      the request, drives it), so the action stays the same;
    - the poisoned description removed: the agent does what the user asked (`intended_action`);
    - the injected result removed: likewise, when the intended call needs no value from that result.
    Clean cases get no copies: what an agent does with no request, or with a data source removed, is
    not known, and guessing it would teach the proxy the label rather than the behaviour.
    """
    if not case.get("follows") or "intended_action" not in case:
        return []
    msgs = case["messages"]
    driver = case.get("driver") or {}
    intended = dict(case["intended_action"])
    out = [dict(case, messages=[m for m in msgs if m["role"] != "user"])]
    if driver.get("kind") == "tool_description":
        out.append(dict(case, tools=[t for t in case.get("tools") or [] if t["name"] != driver.get("tool")],
                        action=intended))
    elif driver.get("kind") == "tool_result":
        i = driver.get("message_index")
        if isinstance(i, int) and 0 <= i < len(msgs):
            removed = msgs[i].get("content") or ""
            if not any(len(v) >= 3 and v in removed for v in argument_values(intended.get("arguments", {}))):
                out.append(dict(case, messages=msgs[:i] + msgs[i + 1:], action=intended))
    return out


def request_counterfactual(case: dict) -> dict | None:
    """The user's turns removed from a call the user drove, with that call marked unlikely.

    Leave-one-out reads a benign call's dependence on the request (dU) against its dependence on a
    tool result (dS). A benign call that copies values from a result always depends on the result;
    it passes only if it depends on the request more. An agent with no request has nothing to act
    on, so it would not make the user's call: these copies say so, token by token, on the values the
    call chose (the tool name and argument values), with an unlikelihood loss. Together with the
    followed-attack copies (the call stays without the request) they teach what drives a call.
    Generator cases whose driver is the user qualify, and every call of an AgentDojo run with no
    attack (trace_request_counterfactual).
    """
    if (case.get("driver") or {}).get("kind") != "user" or not case.get("action"):
        return None
    msgs = [m for m in case["messages"] if m["role"] != "user"]
    return dict(case, messages=msgs, unlikely_action=True)


def trace_request_counterfactual(trace: dict, rng: random.Random) -> dict | None:
    """A request counterfactual from an AgentDojo run with no attack: one of its calls after the
    first tool result, with the context before it and no user turns."""
    if trace.get("injection_task") is not None:
        return None
    msgs = trace["messages"]
    first_tool = next((i for i, m in enumerate(msgs) if m["role"] == "tool"), None)
    if first_tool is None:
        return None
    steps = [i for i, m in enumerate(msgs) if i > first_tool and m["role"] == "assistant" and m.get("tool_calls")]
    if not steps:
        return None
    k = rng.choice(steps)
    call = rng.choice(msgs[k]["tool_calls"])
    return {"messages": [m for m in msgs[:k] if m["role"] != "user"], "tools": trace.get("tools"),
            "action": {"name": call["name"], "arguments": call.get("arguments", {})}, "unlikely_action": True}


def trace_texts(case: dict) -> list[str]:
    """Every text field of a conversation (for tokenizer training)."""
    segs = segments(case["messages"], case.get("tools"), case.get("action"))
    return [v for k, v in segs if k == "t"]

"""Scrambled values: training conversations whose copied identifiers are redrawn, so that only copying predicts them.

Standard library only (tested by model/test_scramble.py, run in the suite by test/unit/scramble-values.test.ts).
"""
from __future__ import annotations

import random


def _mutate(value: str, rng: random.Random) -> str:
    """Every letter and digit redrawn from its class; a URL's scheme and a short suffix after the last dot kept."""
    keep_head = next((len(p) for p in ("https://", "http://") if value.startswith(p)), 0)
    dot = value.rfind(".")
    keep_tail = len(value) - dot if dot > keep_head and 2 <= len(value) - dot - 1 <= 4 else 0
    out = []
    for i, c in enumerate(value):
        if i < keep_head or i >= len(value) - keep_tail:
            out.append(c)
        elif c.isdigit():
            out.append(rng.choice("0123456789"))
        elif "a" <= c <= "z":
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz"))
        elif "A" <= c <= "Z":
            out.append(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        else:
            out.append(c)
    return "".join(out)


def _identifier(x: str) -> bool:
    """An id-like value: 6+ characters, no whitespace, a letter and a digit or one of @/._-: (IBANs, emails,
    URLs, file names, ids). Plain words stay (their meaning matters), and so do dates, times and amounts."""
    return (len(x) >= 6 and not any(c.isspace() for c in x) and any(c.isalpha() for c in x)
            and any(c.isdigit() or c in "@/._-:" for c in x))


def scramble_values(case: dict, rng: random.Random) -> dict:
    """The conversation with every copied identifier redrawn, consistently, wherever it occurs.

    An id-like call argument (an IBAN, id, address, URL, file name: `_identifier`) that also
    appears in a message or a tool description was copied from there. Redrawing it (letters and digits
    from their class) in every string of the case leaves the conversation's meaning and labels as they
    were but makes the value impossible to predict from memory: only copying it from the context does.
    The generator's value pools and AgentDojo's recurring accounts (the user's IBAN is in 656 runs) let a
    proxy memorise values instead, and then removing the result a value came from hardly moves the call
    (lab/model/copy_probe.py measures it). Keys and tool names are never touched.
    """
    keys: set[str] = set()
    values: set[str] = set()

    def walk(x, into_values: bool):
        if isinstance(x, dict):
            for k, v in x.items():
                keys.add(k)
                walk(v, into_values)
        elif isinstance(x, list):
            for v in x:
                walk(v, into_values)
        elif into_values and isinstance(x, str) and _identifier(x):
            values.add(x)

    calls = [case["action"]] if case.get("action") else []
    calls += [c for m in case["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    for c in calls:
        walk(c.get("arguments") or {}, True)
    walk(case, False)
    names = {c.get("name") for c in calls} | {t.get("name") for t in case.get("tools") or []}
    texts = [m.get("content") or "" for m in case["messages"]] + [t.get("description") or "" for t in case.get("tools") or []]
    copied = sorted((v for v in values if v not in keys and v not in names and any(v in t for t in texts)),
                    key=lambda v: (-len(v), v))
    if not copied:
        return case
    mapping = {v: _mutate(v, rng) for v in copied}

    def replace(x):
        if isinstance(x, dict):
            return {k: replace(v) for k, v in x.items()}
        if isinstance(x, list):
            return [replace(v) for v in x]
        if isinstance(x, str):
            for old in copied:
                if old in x:
                    x = x.replace(old, mapping[old])
            return x
        return x

    return replace(case)

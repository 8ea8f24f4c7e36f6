"""Scrambled values and names: training conversations whose copied identifiers are redrawn, so that only copying
predicts them, and whose tool names are redrawn, so that only the descriptions tell the tools apart.

Standard library only (tested by model/test_scramble.py, run in the suite by test/unit/scramble-values.test.ts).
"""
from __future__ import annotations

import json
import random
import re


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

    def replace(x: str) -> str:
        for old in copied:
            if old in x:
                x = x.replace(old, mapping[old])
        return x

    return _map_strings(case, replace)


def _map_strings(x, fn):
    """`x` with `fn` applied to every string value (keys stay) of its dicts and lists."""
    if isinstance(x, dict):
        return {k: _map_strings(v, fn) for k, v in x.items()}
    if isinstance(x, list):
        return [_map_strings(v, fn) for v in x]
    return fn(x) if isinstance(x, str) else x


_NAME_CHARS = "A-Za-z0-9_\\-"
_SYLLABLE_HEADS = "bdfgklmnprstvz"
_SYLLABLE_VOWELS = "aeiou"


def _named_identifier(name: str) -> bool:
    """A tool name that reads as an identifier (snake_case, kebab-case, camelCase or with a digit), not a plain
    word: only such names are renamed, so that a plain-word name ("search") never rewrites the prose around it."""
    return (len(name) >= 4 and re.fullmatch(f"[{_NAME_CHARS}]+", name) is not None
            and ("_" in name or "-" in name or any(c.isdigit() for c in name)
                 or re.search("[a-z][A-Z]", name) is not None))


def _pseudo_name(name: str, rng: random.Random) -> str:
    """A pronounceable name of no meaning with as many snake_case parts as `name` has words (1-3)."""
    words = max(1, min(3, len([w for w in re.split(r"[_\-]|(?<=[a-z])(?=[A-Z])", name) if w])))
    part = lambda: "".join(rng.choice(_SYLLABLE_HEADS) + rng.choice(_SYLLABLE_VOWELS) for _ in range(rng.randint(2, 3)))
    return "_".join(part() for _ in range(words))


def scramble_names(case: dict, rng: random.Random) -> dict:
    """The conversation with every identifier-like tool name replaced, consistently, by a name of no meaning.

    The generator's eight domains and AgentDojo's two suites reuse the same few dozen tools, so a proxy learns
    which name follows which request and never needs the description: on tools it never saw, removing a
    description moves the call by its presence, not its words (docs/evaluation.md, 2026-11-27). With the names
    redrawn (in the tool list, every call, every tool message and every text that mentions them, as whole
    identifiers), only the description ties a request, or a poisoned description's instruction, to the tool
    that serves it. Labels are unchanged: the mapping is one-to-one and applied to every string of the case.
    """
    calls = [case["action"]] if case.get("action") else []
    calls += [c for m in case["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    names = {c.get("name") for c in calls} | {t.get("name") for t in case.get("tools") or []}
    names = sorted((n for n in names if isinstance(n, str) and _named_identifier(n)), key=lambda n: (-len(n), n))
    if not names:
        return case
    text = json.dumps(case, ensure_ascii=False)
    mapping: dict[str, str] = {}
    for n in names:
        new = _pseudo_name(n, rng)
        while new in mapping.values() or new in names or new in text:
            new = _pseudo_name(n, rng)
        mapping[n] = new
    pattern = re.compile(f"(?<![{_NAME_CHARS}])(" + "|".join(re.escape(n) for n in names) + f")(?![{_NAME_CHARS}])")
    return _map_strings(case, lambda x: pattern.sub(lambda m: mapping[m.group(1)], x))

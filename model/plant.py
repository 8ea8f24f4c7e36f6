"""Guard cases planted into a user's own agent traffic, for `edgearmor adapt` (model/adapt.py).

A call site is a real call of the traffic with the messages before it and its conversation's tools. The
attacks are corpus.make_case's (tool-result injections at any position, poisoned descriptions, A1 and A2,
followed and ignored), with the traffic's tools as the attacker's targets and, for half the cases, argument
values the user really uses ("recurring": an IBAN, an address or an id from the traffic's own calls), since
an attacker who knows the user's accounts is the case leave-one-out finds hardest when those values were
memorised. Standard library only (tested by model/test_adapt.py without torch).
"""
from __future__ import annotations

import json
import random

import corpus
import poison_shapes
from chat_format import argument_values
from scramble import _identifier

# Longest argument text reused as a recurring attacker value: ids and addresses, not whole message bodies.
MAX_RECURRING_CHARS = 80
FOLLOWED = ("tool_result_injection", "tool_poisoning")
IGNORED = ("ignored_injection", "ignored_poisoning")
# Holdout mix: real calls, followed attacks, ignored attacks.
HOLDOUT_SHARES = (0.40, 0.35, 0.25)


def language_model_part(conv: dict) -> dict:
    """The conversation as language-modelling data: cut before its first excluded call, so a call the base
    guard blocked (and what the agent did after it) is never trained as likely."""
    conv = normalise(conv)
    excluded = [k for k, _ in conv.get("excluded_calls") or []]
    return dict(conv, messages=conv["messages"][: min(excluded)]) if excluded else conv


def normalise(conv: dict) -> dict:
    """A conversation with every message's content a string (the guard's format allows null beside calls)."""
    return dict(conv, messages=[dict(m, content=m.get("content") or "") for m in conv["messages"]],
                tools=[corpus.clean_tool(t) for t in conv.get("tools") or []])


def call_sites(conv: dict) -> list[tuple]:
    """make_case bases for every call of a conversation but those in its `excluded_calls` ([message index,
    call index] pairs): (split, domain, messages before the call's turn, the call, the conversation's tools,
    source), with the conversation id as the domain."""
    conv = normalise(conv)
    # Calls the base guard blocked when screening the traffic are never user-driven examples.
    excluded = {(k, j) for k, j in conv.get("excluded_calls") or []}
    out = []
    for k, m in enumerate(conv["messages"]):
        if m["role"] != "assistant":
            continue
        for j, c in enumerate(m.get("tool_calls") or []):
            if (k, j) in excluded:
                continue
            call = {"name": c["name"], "arguments": c.get("arguments") or {}}
            out.append(("adapt", str(conv["id"]), conv["messages"][:k], call, conv["tools"], "traffic"))
    return out


class TrafficCatalogue:
    """Every tool seen in the traffic (with one of its real calls as the argument example), in
    corpus.Catalogue's `pick` interface, and the traffic's argument values for recurring attacker values."""

    def __init__(self, convs: list[dict]):
        tools: dict[str, dict] = {}
        examples: dict[str, dict] = {}
        self.by_key: dict[str, list] = {}
        ids: set[str] = set()
        for conv in map(normalise, convs):
            for t in conv["tools"]:
                tools.setdefault(t["name"], t)
            for m in conv["messages"]:
                for c in m.get("tool_calls") or []:
                    args = c.get("arguments") or {}
                    examples.setdefault(c["name"], {"name": c["name"], "arguments": args})
                    tools.setdefault(c["name"], {"name": c["name"], "description": "", "parameters": {
                        "type": "object", "properties": {k: {"type": "string"} for k in args}, "required": []}})
                    for k, v in args.items() if isinstance(args, dict) else ():
                        for x in _scalars(v):
                            if x not in self.by_key.setdefault(k, []):
                                self.by_key[k].append(x)
                            if isinstance(x, str) and _identifier(x):
                                ids.add(x)
        self.tools = [(tools[n], examples.get(n)) for n in sorted(tools)]
        self.ids = sorted(ids)

    def pick(self, rng: random.Random, split: str, n: int, avoid: set[str]) -> list[tuple[dict, dict | None]]:
        pool = [x for x in self.tools if x[0]["name"] not in avoid]
        return rng.sample(pool, min(n, len(pool)))

    def recurring(self, rng: random.Random, key: str, schema: dict | None):
        """A value of the traffic for argument `key` (same name when it has one, else any id-like value), or
        None when the schema asks for what the traffic cannot give (an enum, a boolean, a number, an object)."""
        t = (schema or {}).get("type")
        if (schema or {}).get("enum") or t in ("boolean", "object", "array"):
            return None
        numeric = t in ("integer", "number")
        same = [v for v in self.by_key.get(key, []) if isinstance(v, (int, float)) == numeric]
        if same:
            return rng.choice(same)
        return None if numeric or not self.ids else rng.choice(self.ids)


def _scalars(v) -> list:
    if isinstance(v, dict):
        return [x for y in v.values() for x in _scalars(y)]
    if isinstance(v, list):
        return [x for y in v for x in _scalars(y)]
    if isinstance(v, str):
        return [v] if 0 < len(v) <= MAX_RECURRING_CHARS else []
    return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


def attack_families(which: str) -> dict[str, list[str]]:
    """`train`: corpus.families('train') only (held-out families stay unseen); `all`: every family."""
    if which == "train":
        return corpus.families("train")
    if which == "all":
        return {"inj": list(corpus.INJECTIONS), "goal": list(corpus.GOAL_STYLES), "a1": list(corpus.POISONS_A1),
                "a2": list(corpus.POISONS_A2), "look": list(poison_shapes.LOOKALIKE),
                "extra": list(poison_shapes.EXTRA_PARAM)}
    raise ValueError(f'unknown families "{which}": should be one of train, all')


def plant(rng: random.Random, cat: TrafficCatalogue, site: tuple, kind: str, n: int, attacks: dict,
          value_cat: TrafficCatalogue | None = None) -> dict | None:
    """corpus.make_case at a traffic call site; attacked kinds draw recurring values (from `value_cat`, by
    default `cat`) for half the cases, marked `attacker_value_source` ("none" for a lookalike tool, which takes
    the user's own arguments). None when the site cannot carry the
    kind, or when a followed A2 attack's value happens to be the user's own (the call would be benign)."""
    source = "recurring" if kind not in ("benign", "lm") and rng.random() < 0.5 else "fresh"
    used = []

    def value_of(r, key, schema):
        v = (value_cat or cat).recurring(r, key, schema) if source == "recurring" else None
        if v is None:
            return corpus.attacker_value(r, key, schema)
        used.append(v)
        return v

    case = corpus.make_case(rng, cat, site, kind, n, attacks, value_of=value_of, system_prompt=False,
                            shapes=poison_shapes.SHAPES)
    if case is None:
        return None
    if case["follows"] and case["action"]["arguments"] == case["intended_action"]["arguments"] \
            and case["action"]["name"] == case["intended_action"]["name"]:
        return None
    if case["attack"]:
        # A lookalike tool takes the user's own arguments: the attacker supplies no value at all.
        lookalike = case["attack"].get("shape") == "lookalike"
        case["attacker_value_source"] = "none" if lookalike else "recurring" if used else "fresh"
    return case


def real_case(site: tuple, n: int) -> dict:
    """A real call of the traffic as a guard case: benign, or benign_copy when it copies a value from a tool
    result that the user never typed (corpus.make_case's rule)."""
    _, conv_id, ctx, call, tools, source = site
    results = " ".join(m["content"] for m in ctx if m["role"] == "tool")
    user_text = " ".join(m["content"] for m in ctx if m["role"] == "user")
    copies = any(len(v) >= 3 and v in results and v not in user_text for v in argument_values(call["arguments"]))
    return {"id": f"real-{n}", "domain": conv_id, "source": source, "label": "benign",
            "kind": "benign_copy" if copies else "benign", "attack": None, "follows": False,
            "driver": {"kind": "user"}, "messages": ctx, "tools": tools, "action": call, "intended_action": call,
            "injected_in": [], "poisoned_tool": None}


def _spread(rng: random.Random, sites: list[tuple], n: int, repeat: bool) -> list[tuple]:
    """n sites, round-robin over conversations in a shuffled order, so every conversation gives some before
    any gives many; without `repeat` each site at most once."""
    groups: dict[str, list[tuple]] = {}
    for s in sites:
        groups.setdefault(s[1], []).append(s)
    order = sorted(groups)
    rng.shuffle(order)
    pools = {c: rng.sample(groups[c], len(groups[c])) for c in order}
    out = []
    while len(out) < n and order:
        for c in list(order):
            if len(out) >= n:
                break
            if not pools[c]:
                if not repeat:
                    order.remove(c)
                    continue
                pools[c] = rng.sample(groups[c], len(groups[c]))
            out.append(pools[c].pop())
    return out


def _attacked(rng, cat, site, want: tuple[str, ...], n, attacks, value_cat) -> dict | None:
    has_results = any(m["role"] == "tool" for m in site[2])
    weights = dict(corpus.KINDS)
    kinds = [k for k in want if has_results or "poisoning" in k]
    kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
    case = plant(rng, cat, site, kind, n, attacks, value_cat)
    return case if case is not None and case["kind"] in want else None


def training_cases(convs: list[dict], families: str, seed: int, per_site: int = 2, catalogue: TrafficCatalogue | None = None,
                   key: str = "") -> list[dict]:
    """Planted cases for training: `per_site` cases at every call site of `convs`, kinds drawn by corpus.KINDS
    weights; attacker targets and recurring values from `catalogue` (default: `convs` only). `key` names a batch
    of a run's conversations, so each batch draws its own cases."""
    rng = random.Random(f"{seed}:adapt-train{key}")
    cat = catalogue if catalogue is not None else TrafficCatalogue(convs)
    attacks = attack_families(families)
    out = []
    for site in (s for c in convs for s in call_sites(c)):
        for _ in range(per_site):
            kind = rng.choices([k for k, _ in corpus.KINDS], [w for _, w in corpus.KINDS])[0]
            case = plant(rng, cat, site, kind, len(out), attacks)
            if case is not None:
                case["id"] = f"planted-{len(out)}"
                out.append(case)
    return out


def holdout_cases(holdout: list[dict], train: list[dict], families: str, seed: int, n: int) -> list[dict]:
    """At most n guard cases from the held-out conversations: ~40% real calls, ~35% followed and ~25% ignored
    attacks at their call sites, spread over conversations. The attacker's targets are the held-out traffic's
    tools; recurring values may come from any conversation, train included, as a real attacker's would (the
    values a user keeps using are the ones training saw)."""
    rng = random.Random(f"{seed}:adapt-holdout")
    sites = [s for c in holdout for s in call_sites(c)]
    if not sites or n <= 0:
        return []
    cat = TrafficCatalogue(holdout)
    value_cat = TrafficCatalogue(holdout + train)
    attacks = attack_families(families)
    n_real = min(round(n * HOLDOUT_SHARES[0]), len(sites))
    n_followed = round(n * HOLDOUT_SHARES[1])
    n_ignored = n - round(n * HOLDOUT_SHARES[0]) - n_followed
    out = [real_case(s, i) for i, s in enumerate(_spread(rng, sites, n_real, repeat=False))]
    for want, count in ((FOLLOWED, n_followed), (IGNORED, n_ignored)):
        made, tries = 0, 0
        for site in _spread(rng, sites, count * 4, repeat=True):
            if made >= count:
                break
            case = _attacked(rng, cat, site, want, len(out), attacks, value_cat)
            tries += 1
            if case is not None:
                out.append(case)
                made += 1
    rng.shuffle(out)
    for i, c in enumerate(out):
        c["id"] = f"holdout-{i}"
    return out


def guard_record(case: dict) -> dict:
    """A holdout case as holdout-cases.jsonl carries it to the TypeScript side."""
    rec = {"id": case["id"], "conversation": case["domain"], "messages": case["messages"], "tools": case["tools"],
           "action": {"name": case["action"]["name"], "arguments": case["action"]["arguments"]},
           "label": case["label"], "kind": case["kind"]}
    if case.get("attack"):
        rec["attacker_value_source"] = case["attacker_value_source"]
        rec["injected_in"] = case.get("injected_in") or []
        rec["poisoned_tool"] = case.get("poisoned_tool")
    return rec


def write_jsonl(path: str, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")

"""model/adapt.py's training data: the held-out validation sequences and the generator's, fixed at the start, and
the traffic's, which grow as screened conversations arrive (`ScreenedStream`: the TypeScript side screens the
training traffic while training runs, and hands over each batch of screened conversations as a file).

Every traffic conversation is encoded once, in the batch it arrived in: the language-modelling windows that
cover its calls, attacks planted at its calls with their counterfactuals, a share of request counterfactuals,
copied values scrambled. The generator's sequences stay `--generator-share` of the whole as the traffic grows.
"""
from __future__ import annotations

import json
import os
import random

import plant

# Request counterfactuals of traffic cases: at 1.0 a first try pushed dU up on every real call.
TRAFFIC_REQUEST_COUNTERFACTUALS = 0.33
# Generator copies as lab/model/finetune.sh draws them.
GENERATOR_COUNTERFACTUALS = 0.5
GENERATOR_REQUEST_COUNTERFACTUALS = 0.33
# Sequences scored at each evaluation. On 2 shared cores the proxy reads ~3,000 tokens/s forward only: the
# full holdout (333 sequences from 240 cases) and 150 generator cases took 119 s, an eval every 2 minutes
# would have eaten the budget; these take ~30 s.
VALIDATION_TRAFFIC_SEQUENCES = 64
GENERATOR_VALIDATION_CASES = 32
# A stream's files are named by the order they were written: six digits, then .jsonl.
STREAM_FILE_DIGITS = 6
STREAM_DONE = "done"


class BadInput(Exception):
    """Input the command cannot run on (exit 2)."""


def load_jsonl(path: str) -> list[dict]:
    """JSON Lines as the TypeScript side writes them (data.load_jsonl would import the tokenizer, and regex with it)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def check_conversations(rows: list, name: str) -> None:
    """Raises BadInput unless every row is a conversation record ({id, messages, tools}, `unscreened` a bool)."""
    for i, c in enumerate(rows):
        if not isinstance(c, dict) or not isinstance(c.get("messages"), list) or "id" not in c:
            raise BadInput(f"{name} line {i + 1}: expected {{id, messages, tools}}")
        if not isinstance(c.get("unscreened", False), bool):
            raise BadInput(f"{name} line {i + 1}: unscreened is true or false, not {c['unscreened']!r}")


def trained_conversations(inputs: dict) -> list[dict]:
    """The training traffic that is trained on: all but the conversations marked `unscreened` (the screening
    budget ran out before them, or with --screened-dir they arrive screened later). Those stay in
    traffic-train.jsonl because the held-out cases' recurring values are drawn from all of the user's traffic, so
    the cases planted before screening and after it are the same."""
    return [c for c in inputs["train"] if not c.get("unscreened")]


def write_holdout_cases(args, inputs: dict) -> list[dict]:
    """Plants the held-out guard cases (seeded: the same for the same inputs) and writes WORK/holdout-cases.jsonl."""
    holdout = plant.holdout_cases(inputs["holdout"], inputs["train"], args.families, args.seed, args.holdout_cases)
    plant.write_jsonl(os.path.join(args.work, "holdout-cases.jsonl"), [plant.guard_record(c) for c in holdout])
    return holdout


class ScreenedStream:
    """Screened training conversations arriving in a folder while training runs: files NNNNNN.jsonl of conversation
    records, each renamed into place whole, then a file `done` once screening has ended."""

    def __init__(self, folder: str):
        self.folder = folder
        self.read: set[str] = set()
        self.done = False

    def poll(self) -> list[list[dict]]:
        """The files that arrived since the last poll, in order, each checked; [] once `done` has been seen."""
        if self.done:
            return []
        # `done` first: a file written before it is then in the listing below.
        done = os.path.exists(os.path.join(self.folder, STREAM_DONE))
        names = sorted(n for n in os.listdir(self.folder) if n.endswith(".jsonl") and len(n) == STREAM_FILE_DIGITS + 6 and n not in self.read)
        out = []
        for name in names:
            self.read.add(name)
            try:
                rows = load_jsonl(os.path.join(self.folder, name))
            except ValueError as e:
                raise BadInput(f"{name} is not JSON Lines: {e}") from None
            check_conversations(rows, name)
            out.append(rows)
        self.done = done
        return out


class TrainingData:
    """The held-out cases (written to WORK), the validation sequences, the generator's pool and the traffic's
    encoded sequences, which `add` extends with each batch of screened conversations."""

    def __init__(self, args, inputs: dict, tok):
        import train
        from data import counterfactuals, request_counterfactual

        self.args, self.tok = args, tok
        train._TOK = tok
        self._encode_job = train._encode_job
        self.holdout = write_holdout_cases(args, inputs)
        # Attacker targets and recurring values for the cases planted into training traffic: every training
        # conversation, whether or not it is screened yet (values are the user's; no text of them is trained on).
        self.catalogue = plant.TrafficCatalogue(inputs["train"])
        self.awaiting = sum(1 for c in inputs["train"] if c.get("unscreened"))
        self.traffic: list = []
        self.batches = 0
        self.kinds: dict[str, int] = {}
        self.tally = {"traffic_train_conversations": 0, "lm_conversations": 0, "call_sites": 0, "lm": 0, "counterfactual": 0, "request_counterfactual": 0}

        rng = random.Random(f"{args.seed}:adapt-encode")
        self.gen_pool, self.gen_counts = [], {}
        if args.generator_share > 0:
            g_rng = random.Random(f"{args.seed}:adapt-generator")
            gen = inputs["gen_train"]
            g_cf = [x for c in gen for x in counterfactuals(c) if g_rng.random() < GENERATOR_COUNTERFACTUALS]
            g_rq = [x for x in map(request_counterfactual, gen) if x is not None and g_rng.random() < GENERATOR_REQUEST_COUNTERFACTUALS]
            self.gen_pool = self.enc(rng, gen, 1.0, 0.15) + self.enc(rng, g_cf + g_rq, 1.0, 1.0)
            g_rng.shuffle(self.gen_pool)
            self.gen_counts = {"generator_cases": len(gen), "generator_counterfactual": len(g_cf), "generator_request_counterfactual": len(g_rq)}

        followed = [c for c in self.holdout if c["follows"]]
        real = [c for c in self.holdout if c["kind"] in ("benign", "benign_copy")]
        self.val_traffic = self.enc(rng, followed + real + [x for c in followed for x in counterfactuals(c)], 1.0, 0.0)
        gv_rng = random.Random(f"{args.seed}:adapt-generator-validation")
        if len(self.val_traffic) > VALIDATION_TRAFFIC_SEQUENCES:
            self.val_traffic = gv_rng.sample(self.val_traffic, VALIDATION_TRAFFIC_SEQUENCES)
        gen_val = inputs["gen_val"]
        if len(gen_val) > GENERATOR_VALIDATION_CASES:
            gen_val = gv_rng.sample(gen_val, GENERATOR_VALIDATION_CASES)
        self.val_gen = self.enc(rng, gen_val, 1.0, 0.0)
        self.hk: dict[str, int] = {}
        for c in self.holdout:
            self.hk[c["kind"]] = self.hk.get(c["kind"], 0) + 1
        self.train: list = []
        self.add(trained_conversations(inputs), parallel=True, streamed=False)

    def enc(self, rng: random.Random, cases: list, tools_p: float, redact_p: float, parallel: bool = True) -> list:
        # Draws stay in this process, as train.py's enc does, so any worker count encodes the same.
        jobs = [(c, self.args.max_len, rng.getrandbits(32), rng.random() < tools_p, rng.random() < redact_p) for c in cases]
        if parallel and self.args.threads > 1 and len(jobs) > 64:
            import multiprocessing as mp
            with mp.get_context("fork").Pool(self.args.threads) as pool:
                encoded = pool.map(self._encode_job, jobs, chunksize=32)
        else:
            encoded = [self._encode_job(j) for j in jobs]
        return [e for e in encoded if e is not None]

    def add(self, conversations: list[dict], parallel: bool = False, streamed: bool = True) -> None:
        """Encodes a batch of screened training conversations into the traffic's sequences (the batch's own draws,
        keyed by its position: the first batch draws as a run without a stream does) and resizes the generator's share.
        In-process unless `parallel`: forking beside torch's running threads is left alone. A `streamed` batch is
        the screened copy of conversations traffic-train.jsonl marked unscreened."""
        from data import call_windows, counterfactuals, request_counterfactual
        from scramble import scramble_values

        args, key = self.args, "" if self.batches == 0 else f":{self.batches}"
        self.batches += 1
        if streamed:
            self.awaiting -= len(conversations)
        lm_conversations = [c for c in map(plant.language_model_part, conversations) if len(c["messages"]) > 1]
        lm = [w for c in lm_conversations for w in call_windows(self.tok, c, args.max_len)]
        planted = plant.training_cases(conversations, args.families, args.seed, catalogue=self.catalogue, key=key)
        cf = [x for c in planted for x in counterfactuals(c)]
        rq_rng = random.Random(f"{args.seed}:adapt-rq{key}")
        rq = [x for x in map(request_counterfactual, planted) if x is not None and rq_rng.random() < TRAFFIC_REQUEST_COUNTERFACTUALS]
        # After the counterfactuals are cut (they find values by their text), every traffic-derived sequence.
        sv_rng = random.Random(f"{args.seed}:adapt-scramble{key}")
        lm, planted_sv, cf, rq = ([scramble_values(c, sv_rng) for c in cases] for cases in (lm, planted, cf, rq))
        rng = random.Random(f"{args.seed}:adapt-encode-traffic{key}")
        self.traffic += self.enc(rng, lm, 0.8, 0.15, parallel) + self.enc(rng, planted_sv, 1.0, 0.15, parallel) + self.enc(rng, cf + rq, 1.0, 1.0, parallel)
        for c in planted:
            k = c["kind"] + (f"/{c['attacker_value_source']}" if c.get("attacker_value_source") else "")
            self.kinds[k] = self.kinds.get(k, 0) + 1
        for name, n in (("traffic_train_conversations", len(conversations)), ("lm_conversations", len(lm_conversations)),
                        ("call_sites", sum(len(plant.call_sites(c)) for c in conversations)), ("lm", len(lm)),
                        ("counterfactual", len(cf)), ("request_counterfactual", len(rq))):
            self.tally[name] += n
        want = round(args.generator_share / (1 - args.generator_share) * len(self.traffic)) if self.gen_pool else 0
        # Cycled when the generator file is smaller than its share.
        self.train = self.traffic + [self.gen_pool[i % len(self.gen_pool)] for i in range(want)]

    def keys(self) -> list:
        """A name for each sequence of `train`, in its order, that stays the sequence's as the data grows: `add`
        only appends traffic sequences and generator slots, and slot i is always the same generator sequence."""
        return list(range(len(self.traffic))) + [("generator", i) for i in range(len(self.train) - len(self.traffic))]

    def counts(self, holdout_conversations: int) -> dict:
        """What was trained on, for train-log.json and the report."""
        return {**self.tally, "traffic_unscreened_conversations": max(0, self.awaiting), "traffic_holdout_conversations": holdout_conversations,
                "planted": self.kinds, "traffic_sequences": len(self.traffic), **self.gen_counts,
                **({"generator_sequences": len(self.train) - len(self.traffic)} if self.gen_counts else {}),
                "holdout_cases": self.hk, "validation_traffic_sequences": len(self.val_traffic),
                "validation_generator_sequences": len(self.val_gen), "stream_batches": self.batches,
                "train_sequences": len(self.train), "train_tokens": sum(len(e.ids) for e in self.train)}


class PassOrder:
    """Which training sequences the next batches come from: every sequence once before any twice, as the data grows.
    Screened conversations that arrive in the middle of a pass join the sequences the pass has still to train;
    starting a fresh pass over everything instead trained the first conversations screened again and again
    before the last ones were trained once."""

    def __init__(self):
        self.done: set = set()
        self.passes = 1

    def pending(self, data) -> tuple[list, list]:
        """The sequences (with their keys) this pass has not trained yet; all of them, as a new pass, once none is left."""
        keys = data.keys()
        todo = [i for i, k in enumerate(keys) if k not in self.done]
        if not todo and keys:
            self.done.clear()
            self.passes += 1
            todo = list(range(len(keys)))
        return [data.train[i] for i in todo], [keys[i] for i in todo]

    def trained(self, keys) -> None:
        self.done.update(keys)

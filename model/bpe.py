"""Byte-level BPE: training, encoding, and the tokenizer.json that transformers.js loads.

Pre-tokenisation is the GPT-2 pattern that @huggingface/tokenizers' ByteLevel pre-tokenizer uses,
with JavaScript's `\\s` spelled out so Python and the browser split text identically.
"""
from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from typing import Iterable

import regex

from chat_format import CHAT_TEMPLATE, SPECIAL_TOKENS, BOS, EOS, PAD

# JavaScript's \s (ECMAScript WhiteSpace + LineTerminator); Python's \s differs (e.g. \x1c-\x1f).
_JS_WS = r"\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
PRETOKENIZE = regex.compile(
    rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{_JS_WS}\p{{L}}\p{{N}}]+|[{_JS_WS}]+(?![^{_JS_WS}])|[{_JS_WS}]+"
)


def bytes_to_unicode() -> dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_CHAR = bytes_to_unicode()


def pretokenize(text: str) -> list[str]:
    return ["".join(BYTE_TO_CHAR[b] for b in _utf8(w)) for w in PRETOKENIZE.findall(text)]


def _utf8(s: str) -> bytes:
    # Lone surrogates cannot be UTF-8 encoded; TextEncoder turns each into U+FFFD, and so do we.
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s).encode("utf-8")


def train(texts: Iterable[str], vocab_size: int, min_count: int = 2) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Learn merges until the vocabulary (special tokens + 256 bytes + merges) has vocab_size entries."""
    words = Counter()
    for t in texts:
        words.update(pretokenize(t))
    vocab: dict[str, int] = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for b in range(256):
        vocab[BYTE_TO_CHAR[b]] = len(vocab)
    items = [(list(w), c) for w, c in words.items() if c >= min_count and len(w) > 1]
    pair_counts: dict[tuple[str, str], int] = defaultdict(int)
    where: dict[tuple[str, str], set[int]] = defaultdict(set)
    for wi, (sym, c) in enumerate(items):
        for a, b in zip(sym, sym[1:]):
            pair_counts[(a, b)] += c
            where[(a, b)].add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while len(vocab) < vocab_size and heap:
        negc, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negc or -negc <= 0:
            continue  # stale heap entry
        a, b = pair
        merged = a + b
        merges.append(pair)
        vocab[merged] = len(vocab)
        changed: dict[tuple[str, str], int] = defaultdict(int)
        for wi in list(where[pair]):
            sym, c = items[wi]
            i = 0
            new: list[str] = []
            while i < len(sym):
                if i < len(sym) - 1 and sym[i] == a and sym[i + 1] == b:
                    new.append(merged)
                    i += 2
                else:
                    new.append(sym[i])
                    i += 1
            if new == sym:
                continue
            for p in zip(sym, sym[1:]):
                changed[p] -= c
                where[p].discard(wi)
            for p in zip(new, new[1:]):
                changed[p] += c
                where[p].add(wi)
            items[wi] = (new, c)
        for p, d in changed.items():
            if d:
                pair_counts[p] += d
                if pair_counts[p] > 0:
                    heapq.heappush(heap, (-pair_counts[p], p))
        pair_counts.pop(pair, None)
    return vocab, merges


class Tokenizer:
    """Encodes text fields (never producing special tokens) and whole segment lists."""

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]]):
        self.vocab = vocab
        self.ranks = {p: i for i, p in enumerate(merges)}
        self.merges = merges
        self.special = {t: vocab[t] for t in SPECIAL_TOKENS}
        self.cache: dict[str, list[int]] = {}
        self._byte_lengths = {i: len(t) for t, i in vocab.items()}  # byte-level BPE: one vocab char per byte

    def token_byte_length(self, token_id: int) -> int:
        """UTF-8 byte length of a (non-special) token's text."""
        return self._byte_lengths[token_id]

    @classmethod
    def load(cls, path: str) -> "Tokenizer":
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in tj["model"]["merges"]]
        return cls(tj["model"]["vocab"], merges)  # type: ignore[arg-type]

    def _bpe(self, word: str) -> list[int]:
        hit = self.cache.get(word)
        if hit is not None:
            return hit
        sym = list(word)
        while len(sym) > 1:
            best, best_rank = None, None
            for i in range(len(sym) - 1):
                r = self.ranks.get((sym[i], sym[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = sym[best], sym[best + 1]
            out, i = [], 0
            while i < len(sym):
                if i < len(sym) - 1 and sym[i] == a and sym[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            sym = out
        ids = [self.vocab[s] for s in sym]
        if len(self.cache) < 500_000:
            self.cache[word] = ids
        return ids

    def encode_text(self, text: str) -> list[int]:
        ids: list[int] = []
        for w in pretokenize(text):
            ids += self._bpe(w)
        return ids

    def encode_segments(self, segs) -> list[int]:
        ids: list[int] = []
        for kind, value in segs:
            ids += [self.special[value]] if kind == "s" else self.encode_text(value)
        return ids

    def save(self, out_dir: str, model_max_length: int) -> None:
        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {"id": self.vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": True}
                for t in SPECIAL_TOKENS
            ],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
            "model": {
                "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                "vocab": self.vocab,
                "merges": [f"{a} {b}" for a, b in self.merges],
            },
        }
        with open(f"{out_dir}/tokenizer.json", "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
        cfg = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "unk_token": None,
            "add_bos_token": False, "add_eos_token": False,
            "model_max_length": model_max_length,
            "clean_up_tokenization_spaces": False,
            "chat_template": CHAT_TEMPLATE,
        }
        with open(f"{out_dir}/tokenizer_config.json", "w", encoding="utf-8") as f:
            json.dump(cfg, f, ensure_ascii=False, indent=2)

"""Build a tiny random-weight decoder with a real model family's vocabulary, in the onnx-community layout,
for the rendering tests (test/engine/family-render.test.ts builds them once into a cache directory).

  <out>/config.json             vocab_size from the family, 2 layers, hidden 32, 4 heads over 2 KV heads
  <out>/onnx/model.onnx         fp32, the standard Optimum graph (no num_logits_to_keep, no attention outputs: the
                                engine's logits and attention adapters add them at load); --extensions exports
                                EdgeArmor's own inputs and outputs instead
                                --layout gqa writes the same weights in onnxruntime-genai's fused layout instead
                                (RotaryEmbedding and GroupQueryAttention, SimplifiedLayerNormalization;
                                make_fused_fixture.py's gqa-rope: the kernel's own rotary needs a head size of 16,
                                these heads are 8)
  <out>/onnx/model_q4.onnx      MatMulNBits 4-bit (quantize.py)
  <out>/tokenizer.json, tokenizer_config.json   copied from --tokenizer-dir (the real tokenizer and chat template)
  <out>/manifest.json

The weights are random (seeded) and drawn wide, as make_tiny_fixture.py draws them, so log-probs move visibly
when a part of the context is left out. Only the vocabulary and the file layout are the family's: the graph is
EdgeArmor's Llama-style decoder whatever the family (a random-weight model has no architecture to imitate).

Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_family_fixture.py \
         --tokenizer-dir DIR --vocab N --out DIR [--name NAME] [--extensions] [--layout standard|gqa]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
from export_onnx import export  # noqa: E402
from make_fused_fixture import build as build_fused, unchecked  # noqa: E402
from make_tiny_fixture import wide_random  # noqa: E402
from proxy_model import ProxyConfig, ProxyLM  # noqa: E402
from quantize import quantize_model  # noqa: E402


def special_id(tokenizer: dict, config: dict, key: str) -> int | None:
    """The id of tokenizer_config.json's `key` token (a string or an AddedToken object), if it has one."""
    token = config.get(key)
    if isinstance(token, dict):
        token = token.get("content")
    if not isinstance(token, str):
        return None
    for added in tokenizer.get("added_tokens", []):
        if added["content"] == token:
            return added["id"]
    return None


def family_model(vocab: int, tokenizer: dict, config: dict) -> ProxyLM:
    """Seeded random weights over the family's vocabulary, drawn wide (see make_tiny_fixture.py)."""
    bos = special_id(tokenizer, config, "bos_token")
    eos = special_id(tokenizer, config, "eos_token")
    pad = special_id(tokenizer, config, "pad_token")
    cfg = ProxyConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                      bos_token_id=bos if bos is not None else 0, eos_token_id=eos if eos is not None else 0,
                      pad_token_id=pad if pad is not None else (eos if eos is not None else 0))
    return wide_random(cfg, std=0.2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer-dir", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default=None)
    ap.add_argument("--extensions", action="store_true", help="EdgeArmor's num_logits_to_keep and attention outputs")
    ap.add_argument("--layout", choices=["standard", "gqa"], default="standard",
                    help="the standard Optimum graph, or onnxruntime-genai's GroupQueryAttention layout")
    args = ap.parse_args()
    with open(os.path.join(args.tokenizer_dir, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    with open(os.path.join(args.tokenizer_dir, "tokenizer_config.json")) as f:
        config = json.load(f)
    biggest = max([a["id"] for a in tokenizer.get("added_tokens", [])] + [len(tokenizer["model"]["vocab"]) - 1])
    if biggest >= args.vocab:
        sys.exit(f"--vocab {args.vocab} is smaller than the tokenizer's largest id + 1 ({biggest + 1})")
    model = family_model(args.vocab, tokenizer, config)
    # A directory of this process's own: two test workers may build the same fixture at once.
    tmp = f"{args.out}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(f"{tmp}/onnx")
    with open(f"{tmp}/config.json", "w") as f:
        json.dump(model.cfg.to_hf(), f, indent=2)
        f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer_dir, name), f"{tmp}/{name}")
    if args.layout == "standard":
        export(model, f"{tmp}/onnx/model.onnx", extensions=args.extensions)
        quantize_model(f"{tmp}/onnx/model.onnx", f"{tmp}/onnx/model_q4.onnx")
    else:
        # make_fused_fixture.py's "gqa-rope" graph: onnx's checker knows none of its contrib ops (see there).
        import onnx
        onnx.save(build_fused(model, "gqa-rope"), f"{tmp}/onnx/model.onnx")
        unchecked(quantize_model, f"{tmp}/onnx/model.onnx", f"{tmp}/onnx/model_q4.onnx")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", tmp, "--name", args.name or os.path.basename(args.out)], check=True)
    # Whole or not at all: a build stopped half-way never leaves a model directory behind, and a build
    # that finishes second keeps the first one's directory (the same seeded weights).
    try:
        os.rename(tmp, args.out)
    except OSError:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

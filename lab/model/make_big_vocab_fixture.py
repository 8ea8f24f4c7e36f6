"""Build a small decoder with a big vocabulary, for the logits adapter's tests and benchmark.

Random weights (seed 0), NOT a trained model: 2 layers, hidden 32, 4 attention heads over 2 KV heads (head_dim 8),
intermediate 64, and Qwen2.5's vocabulary size (151936) with tied embeddings, so the LM head (hidden x vocab) is
most of the model and a pass that returns every position's logits costs what it costs on a real hub model.
max_position_embeddings is 32768, as Qwen2.5-0.5B's. The onnx-community layout without EdgeArmor's extensions
(no num_logits_to_keep, no attention outputs): onnx/model.onnx with every initializer in onnx/model.onnx_data.
The tokenizer is the embedded model's (its 4096 ids are all below the vocabulary size).

About 20 MB, so it is not committed: the tests and the benchmark build it once into a cache directory.
Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_big_vocab_fixture.py OUT_DIR
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
MODEL = os.path.join(ROOT, "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
from export_onnx import export  # noqa: E402
from make_tiny_fixture import wide_random  # noqa: E402
from proxy_model import ProxyConfig, ProxyLM  # noqa: E402

NAME = "big-vocab-hub"
VOCAB = 151936
TOKENIZER_DIR = os.path.join(ROOT, "public", "models", "edgearmor-proxy")


def big_vocab_model() -> ProxyLM:
    """Seeded random weights drawn wide, as the tiny fixture's (make_tiny_fixture.py), so logits are peaked."""
    return wide_random(ProxyConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_big_vocab_fixture.py OUT_DIR")
    out = sys.argv[1]
    # Built beside the destination and renamed into place, so a reader never sees a half-written fixture.
    tmp = f"{out}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(f"{tmp}/onnx")
    model = big_vocab_model()
    with open(f"{tmp}/config.json", "w") as f:
        json.dump(model.cfg.to_hf(), f, indent=2)
        f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{TOKENIZER_DIR}/{name}", f"{tmp}/{name}")
    export(model, f"{tmp}/onnx/model.onnx", extensions=False, external_data="model.onnx_data")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", tmp, "--name", NAME], check=True)
    try:
        os.rename(tmp, out)
    except OSError:
        # Another process built it first: theirs is as good.
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

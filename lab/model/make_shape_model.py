"""Build a random-weight decoder at a published small instruct model's shape, in the onnx-community fp32 layout,
for the real-size benchmark (lab/bench/real-shapes.ts).

  <out>/config.json          the shape (hidden, layers, heads, KV heads, head_dim, MLP, vocabulary, tied embeddings)
  <out>/onnx/model.onnx      the standard decoder graph: no num_logits_to_keep, no attention outputs (the engine's
                             logits and attention adapters add what it reads at load, as for a hub download)
  <out>/onnx/model.onnx_data every initializer (0.5-2.4 GB: the 0.6B shape is over protobuf's 2 GiB limit)
  <out>/tokenizer.json, tokenizer_config.json   the embedded model's (its ids are below every vocabulary here)
  <out>/manifest.json

Timing only: the weights are random (N(0, 0.02), norms 1), so no score from these models means anything. The graph
is EdgeArmor's Llama-style decoder at the family's dimensions; what it leaves out of each family (Qwen2.5's QKV
biases, Qwen3's per-head q/k RMSNorm) is under 0.1% of a pass's arithmetic.

Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_shape_model.py SHAPE OUT_DIR
SHAPE: smollm2-135m | qwen2.5-0.5b | qwen3-0.6b
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
MODEL = os.path.join(ROOT, "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
import export_onnx  # noqa: E402
from proxy_model import ProxyConfig, ProxyLM  # noqa: E402

TOKENIZER_DIR = os.path.join(ROOT, "public", "models", "edgearmor-proxy")


@dataclass
class ShapeConfig(ProxyConfig):
    """ProxyConfig with an explicit head size: Qwen3-0.6B's 16 heads of 128 are twice its hidden size."""
    explicit_head_dim: int = 0

    @property
    def head_dim(self) -> int:
        return self.explicit_head_dim or self.hidden_size // self.num_attention_heads

    def to_hf(self) -> dict:
        d = super().to_hf()
        del d["explicit_head_dim"]
        return d


# The published config.json of each model (HuggingFaceTB/SmolLM2-135M-Instruct, Qwen/Qwen2.5-0.5B-Instruct,
# Qwen/Qwen3-0.6B); all three tie the LM head to the embeddings.
SHAPES = {
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                         rope_theta=100000.0),
    "qwen2.5-0.5b": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                         rope_theta=1000000.0, rms_norm_eps=1e-6),
    "qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, explicit_head_dim=128,
                       max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6),
}


def shape_model(shape: str) -> ProxyLM:
    torch.manual_seed(0)
    model = ProxyLM(ShapeConfig(**SHAPES[shape]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0, 0.02)
    model.eval()
    return model


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit(f"usage: make_shape_model.py {{{'|'.join(SHAPES)}}} OUT_DIR")
    shape, out = sys.argv[1], sys.argv[2]
    model = shape_model(shape)
    # Built beside the destination and renamed into place, so a reader never sees a half-written model.
    tmp = f"{out}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(f"{tmp}/onnx")
    with open(f"{tmp}/config.json", "w") as f:
        json.dump(model.cfg.to_hf(), f, indent=2)
        f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{TOKENIZER_DIR}/{name}", f"{tmp}/{name}")
    # Over 2 GiB torch writes one file per initializer beside the graph and the in-memory checker refuses the
    # proto, so the export goes to a scratch folder, is checked by path, and only the two final files are kept.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(out))) as scratch:
        checker = onnx.checker.check_model
        onnx.checker.check_model = lambda m: None
        try:
            export_onnx.export(model, f"{scratch}/model.onnx", extensions=False, external_data="model.onnx_data")
        finally:
            onnx.checker.check_model = checker
        onnx.checker.check_model(f"{scratch}/model.onnx")
        for name in ("model.onnx", "model.onnx_data"):
            shutil.move(f"{scratch}/{name}", f"{tmp}/onnx/{name}")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", tmp, "--name", f"{shape}-shape"], check=True)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

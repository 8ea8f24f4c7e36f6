"""Build the committed tiny test model test/fixtures/tiny-proxy/ (seeded random weights) and its golden file.

Hidden 64, 2 layers, 4 heads over 2 KV heads (exercises grouped-query attention), vocab 4096. Weights are
drawn wider than the training init (std 0.02 gives near-uniform logits and attention, which would make the
parity tests weak): embeddings std 0.3, projections std 0.15, RMSNorm weights 1 + 0.2 * N(0, 1), so logits
and attention rows are peaked and a masking or position bug shows up clearly.

Runs the real pipeline scripts: export_onnx.export -> quantize.py -> golden.py -> manifest.py.
Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp python3 lab/model/make_tiny_fixture.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
from export_onnx import export  # noqa: E402
from proxy_model import ProxyConfig, ProxyLM  # noqa: E402

OUT = "test/fixtures/tiny-proxy"
NAME = "tiny-proxy"

README = """# tiny-proxy (test fixture)

Random weights (seed 0), NOT a trained model: hidden 64, 2 layers, 4 attention heads over 2 KV heads,
intermediate 128, vocab 4096. It exists so the ONNX parity tests (test/model/onnx-parity.test.ts) run on
every checkout before the real proxy is trained. Files: config.json, onnx/model.onnx (fp32),
onnx/model_q4.onnx (MatMulNBits 4-bit, block 32), manifest.json. Golden values:
test/fixtures/golden-tiny-proxy.json.

Regenerate: `LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_tiny_fixture.py`
"""


def wide_random(cfg: ProxyConfig, std: float = 0.15) -> ProxyLM:
    """A model of this shape with seeded (0) random weights drawn wide, so its logits are peaked and removing a
    part of the context moves them visibly: embeddings N(0, 0.3), norms around 1, every other weight N(0, std)."""
    torch.manual_seed(0)
    model = ProxyLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name:
                p.normal_(0, 0.3)
            elif name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0, std)
    model.eval()
    return model


def tiny_model() -> ProxyLM:
    """The fixture's model: seeded random weights, drawn wide (see the module docstring)."""
    return wide_random(ProxyConfig(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024))


def main():
    model = tiny_model()
    cfg = model.cfg
    py = sys.executable
    with tempfile.TemporaryDirectory() as run:
        with open(f"{run}/config.json", "w") as f:
            json.dump(cfg.to_hf(), f)
        torch.save(model.state_dict(), f"{run}/model.pt")
        os.makedirs(f"{OUT}/onnx", exist_ok=True)
        with open(f"{OUT}/config.json", "w") as f:
            json.dump(cfg.to_hf(), f, indent=2)
            f.write("\n")
        with open(f"{OUT}/README.md", "w") as f:
            f.write(README)
        export(model, f"{OUT}/onnx/model.onnx")
        subprocess.run([py, f"{MODEL}/quantize.py", OUT], check=True)
        subprocess.run([py, f"{HERE}/golden.py", "--run", run, "--name", NAME], check=True)
    subprocess.run([py, f"{MODEL}/manifest.py", OUT, "--name", NAME], check=True)


if __name__ == "__main__":
    main()

"""Export a random-weight proxy with the embedded model's shapes for the benchmark (timing only, never scoring).

Hidden 256, 4 layers, 2 heads of 128 (2 KV heads), intermediate 704, vocab 4096: the shapes of
public/models/edgearmor-proxy, but max_position_embeddings 4608 so the 2k and 4k cases fit (RoPE is computed
from position ids, there is no table, so the graph is the same as the 1,024-window export). Also writes
onnx/matmul.onnx: one MatMul [m, 256] x [256, 704] (the model's MLP up-projection shape), for the same-run
matmul peak. Output dir (ignored by git): argv[1], default .bench-model.

Usage: /usr/bin/python3 bench/make_bench_model.py [.bench-model]
"""
from __future__ import annotations

import json
import os
import sys

import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
from export_onnx import export  # noqa: E402
from proxy_model import ProxyConfig, ProxyLM  # noqa: E402


def matmul_graph(k: int, n: int, path: str) -> None:
    torch.manual_seed(1)
    w = numpy_helper.from_array((torch.randn(k, n) * 0.02).numpy(), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else ".bench-model"
    torch.manual_seed(0)
    cfg = ProxyConfig(vocab_size=4096, hidden_size=256, intermediate_size=704, num_hidden_layers=4,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4608)
    model = ProxyLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0, 0.02)
    model.eval()
    os.makedirs(f"{out}/onnx", exist_ok=True)
    export(model, f"{out}/onnx/model.onnx")
    matmul_graph(cfg.hidden_size, cfg.intermediate_size, f"{out}/onnx/matmul.onnx")
    with open(f"{out}/config.json", "w") as f:
        json.dump(cfg.to_hf(), f, indent=2)


if __name__ == "__main__":
    main()

"""Build the fused-kernel test fixtures: the tiny test model (same seeded weights as tiny-proxy and
tiny-proxy-hub) laid out the way onnxruntime-genai's model builder writes decoders, with contrib ops.

  test/fixtures/tiny-proxy-gqa/       GroupQueryAttention with do_rotary=1 (rotary inside the kernel, no
                                      position_ids input), packed QKV MatMul, SimplifiedLayerNormalization /
                                      SkipSimplifiedLayerNormalization; onnx/model.onnx (fp32),
                                      onnx/model_q4.onnx (MatMulNBits, quantize.py), model_fp16.onnx and
                                      model_q4f16.onnx (to_fp16.py: float16 activations, KV cache and logits,
                                      as the web builds have)
  test/fixtures/tiny-proxy-gqa-rope/  RotaryEmbedding ops fed position_ids, then GroupQueryAttention
                                      (do_rotary=0) on separate Q/K/V; fp32
  test/fixtures/tiny-proxy-mha/       RotaryEmbedding, the past concatenated and the KV heads repeated in the
                                      graph, MultiHeadAttention with a 4D additive mask built from the 2D
                                      attention_mask (the builder's MultiHeadAttention layout); fp32

Every layout takes input_ids, attention_mask (and position_ids where the graph reads them) and
past_key_values.N.key|value [batch, kv_heads, past, head_dim], and returns logits for every position and
present.N.key|value, as the builder's models do. GroupQueryAttention gets seqlens_k = ReduceSum(mask) - 1
and total_sequence_length = mask.shape[1] (int32), exactly the builder's mask subgraph, so a batch can only
be right padded and no row can have a masked gap.

The graphs are written with onnx.helper from the model's weights (no exporter knows these ops); the
Node tests check each against tiny-proxy-hub, the standard export of the same weights.

Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_fused_fixture.py
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
from make_tiny_fixture import tiny_model  # noqa: E402
from quantize import quantize_model  # noqa: E402
import to_fp16  # noqa: E402

TOKENIZER_DIR = "public/models/edgearmor-proxy"
MS = "com.microsoft"
REGEN = "`LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_fused_fixture.py`"

LAYOUTS = {
    "gqa": ("tiny-proxy-gqa", "GroupQueryAttention with its rotary inside (do_rotary=1), packed QKV, "
            "SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization; fp32, q4 (MatMulNBits), fp16 and q4f16"),
    "gqa-rope": ("tiny-proxy-gqa-rope", "RotaryEmbedding ops fed position_ids, then GroupQueryAttention "
                 "(do_rotary=0); fp32"),
    "mha": ("tiny-proxy-mha", "RotaryEmbedding, KV heads repeated in the graph, MultiHeadAttention with an "
            "additive mask built from attention_mask; fp32"),
}


class Graph:
    """Nodes and initializers of one graph, with unique names."""

    def __init__(self):
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str | None = None, **attrs) -> list[str]:
        self.count += 1
        name = f"/{op_type}_{self.count}"
        outs = [f"{name}/output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain, **attrs))
        return outs

    def one(self, op_type: str, inputs: list[str], domain: str | None = None, **attrs) -> str:
        return self.op(op_type, inputs, 1, domain, **attrs)[0]


def weights(model) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}


def rope_caches(cfg) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin caches [max_positions, head_dim / 2] of the HF (non-interleaved) rotary."""
    hd = cfg.head_dim
    inv = 1.0 / (cfg.rope_theta ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    freqs = np.arange(cfg.max_position_embeddings, dtype=np.float32)[:, None] * inv[None, :]
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def build(model, layout: str) -> onnx.ModelProto:
    cfg = model.cfg
    w = weights(model)
    g = Graph()
    L, H, KV, HD, D = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size
    eps = cfg.rms_norm_eps
    i64 = lambda name, vals: g.init(name, np.array(vals, dtype=np.int64))  # noqa: E731
    cos, sin = rope_caches(cfg)
    g.init("cos_cache", cos)
    g.init("sin_cache", sin)
    one = i64("/const/one", [1])
    scalar_one = i64("/const/one_scalar", 1)

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    if layout != "gqa":
        inputs.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", cfg.vocab_size])]
    for l in range(L):
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{l}.{kv}", TensorProto.FLOAT, ["batch_size", KV, "past_sequence_length", HD]))
            outputs.append(helper.make_tensor_value_info(f"present.{l}.{kv}", TensorProto.FLOAT, ["batch_size", KV, "total_sequence_length", HD]))

    if layout in ("gqa", "gqa-rope"):
        # The builder's mask subgraph: seqlens_k = sum(mask) - 1, total_sequence_length = mask.shape[1].
        summed = g.one("ReduceSum", ["attention_mask", one], keepdims=0)
        seqlens_k = g.one("Cast", [g.one("Sub", [summed, scalar_one])], to=TensorProto.INT32)
        total = g.one("Cast", [g.one("Gather", [g.one("Shape", ["attention_mask"]), scalar_one], axis=0)], to=TensorProto.INT32)
    else:
        # The builder's MultiHeadAttention mask: causal over the key axis (past + new) and the 2D mask, additive.
        seq = g.one("Gather", [g.one("Shape", ["input_ids"]), scalar_one], axis=0)
        tot = g.one("Gather", [g.one("Shape", ["attention_mask"]), scalar_one], axis=0)
        past = g.one("Sub", [tot, seq])
        q_pos = g.one("Add", [g.one("Unsqueeze", [g.one("Range", [i64("/const/zero_scalar", 0), seq, scalar_one]), one]), past])  # [S, 1]
        k_pos = g.one("Unsqueeze", [g.one("Range", [i64("/const/zero_scalar2", 0), tot, scalar_one]), i64("/const/zero", [0])])  # [1, T]
        causal = g.one("LessOrEqual", [k_pos, q_pos])  # [S, T]
        keymask = g.one("Unsqueeze", [g.one("Cast", ["attention_mask"], to=TensorProto.BOOL), i64("/const/axes12", [1, 2])])  # [B, 1, 1, T]
        keep = g.one("And", [causal, keymask])  # [B, 1, S, T]
        bias = g.one("Where", [keep, g.init("/const/zero_f", np.array(0.0, dtype=np.float32)),
                               g.init("/const/min_f", np.array(np.finfo(np.float32).min, dtype=np.float32))])

    x = g.one("Gather", ["model.embed_tokens.weight", "input_ids"], axis=0)
    g.init("model.embed_tokens.weight", w["embed_tokens.weight"])
    residual = x
    pending = None  # the sublayer output that the next SkipSimplifiedLayerNormalization adds to the residual

    def norm(weight_name: str) -> str:
        nonlocal residual, pending
        g.init(weight_name, w[weight_name.removeprefix("model.")])
        if pending is None:
            return g.one("SimplifiedLayerNormalization", [residual, weight_name], axis=-1, epsilon=eps, stash_type=1)
        out, summed = g.op("SkipSimplifiedLayerNormalization", [pending, residual, weight_name], 2, domain=MS, epsilon=eps)
        # Outputs 1 and 2 (mean, inverse std) are unused; output 3 is the residual sum the next norm adds to.
        g.nodes[-1].output[:] = [out, "", "", summed]
        residual, pending = summed, None
        return out

    def matmul(x_in: str, key: str, name: str) -> str:
        return g.one("MatMul", [x_in, g.init(name, np.ascontiguousarray(w[key].T))])

    def heads(t: str, n: int) -> str:
        """[B, S, n * hd] -> [B, n, S, hd]"""
        return g.one("Transpose", [g.one("Reshape", [t, i64(f"/const/shape_{g.count}", [0, 0, n, HD])])], perm=[0, 2, 1, 3])

    for l in range(L):
        p = f"layers.{l}"
        h = norm(f"model.{p}.input_layernorm.weight")
        past_k, past_v = f"past_key_values.{l}.key", f"past_key_values.{l}.value"
        pres_k, pres_v = f"present.{l}.key", f"present.{l}.value"
        if layout == "gqa":
            qkv_w = np.concatenate([w[f"{p}.self_attn.{n}_proj.weight"] for n in "qkv"], axis=0).T
            qkv = g.one("MatMul", [h, g.init(f"model.{p}.attn.qkv_proj.weight", np.ascontiguousarray(qkv_w))])
            g.nodes.append(helper.make_node(
                "GroupQueryAttention", [qkv, "", "", past_k, past_v, seqlens_k, total, "cos_cache", "sin_cache"],
                [f"/{p}/attn/output", pres_k, pres_v], name=f"/{p}/attn/GroupQueryAttention", domain=MS,
                num_heads=H, kv_num_heads=KV, scale=1.0 / math.sqrt(HD), do_rotary=1, rotary_interleaved=0, local_window_size=-1))
            attn = f"/{p}/attn/output"
        else:
            q = matmul(h, f"{p}.self_attn.q_proj.weight", f"model.{p}.attn.q_proj.weight")
            k = matmul(h, f"{p}.self_attn.k_proj.weight", f"model.{p}.attn.k_proj.weight")
            v = matmul(h, f"{p}.self_attn.v_proj.weight", f"model.{p}.attn.v_proj.weight")
            q = g.one("RotaryEmbedding", [q, "position_ids", "cos_cache", "sin_cache"], domain=MS, interleaved=0)
            k = g.one("RotaryEmbedding", [k, "position_ids", "cos_cache", "sin_cache"], domain=MS, interleaved=0)
            if layout == "gqa-rope":
                g.nodes.append(helper.make_node(
                    "GroupQueryAttention", [q, k, v, past_k, past_v, seqlens_k, total],
                    [f"/{p}/attn/output", pres_k, pres_v], name=f"/{p}/attn/GroupQueryAttention", domain=MS,
                    num_heads=H, kv_num_heads=KV, scale=1.0 / math.sqrt(HD), do_rotary=0, local_window_size=-1))
                attn = f"/{p}/attn/output"
            else:
                # The builder's repeat_kv: the past is concatenated in the KV-head layout (that is the present),
                # then each KV head is repeated for its query heads and fed to MultiHeadAttention as [B, T, H * hd].
                rep = H // KV
                kv_out = []
                for t, past_in, pres in ((k, past_k, pres_k), (v, past_v, pres_v)):
                    g.nodes.append(helper.make_node("Concat", [past_in, heads(t, KV)], [pres], name=f"/{pres}/Concat", axis=2))
                    expanded = g.one("Expand", [g.one("Unsqueeze", [pres, i64(f"/const/axis2_{g.count}", [2])]),
                                                i64(f"/const/rep_{g.count}", [1, 1, rep, 1, 1])])
                    full = g.one("Reshape", [expanded, i64(f"/const/bnsh_{g.count}", [0, H, -1, HD])])
                    kv_out.append(g.one("Reshape", [g.one("Transpose", [full], perm=[0, 2, 1, 3]), i64(f"/const/bsd_{g.count}", [0, 0, H * HD])]))
                attn = g.one("MultiHeadAttention", [q, kv_out[0], kv_out[1], "", "", bias], domain=MS,
                             num_heads=H, scale=1.0 / math.sqrt(HD), unidirectional=0)
        pending = matmul(attn, f"{p}.self_attn.o_proj.weight", f"model.{p}.attn.o_proj.weight")
        h2 = norm(f"model.{p}.post_attention_layernorm.weight")
        gate = matmul(h2, f"{p}.mlp.gate_proj.weight", f"model.{p}.mlp.gate_proj.weight")
        up = matmul(h2, f"{p}.mlp.up_proj.weight", f"model.{p}.mlp.up_proj.weight")
        act = g.one("Mul", [g.one("Mul", [gate, g.one("Sigmoid", [gate])]), up])
        pending = matmul(act, f"{p}.mlp.down_proj.weight", f"model.{p}.mlp.down_proj.weight")
    final = norm("model.norm.weight")
    lm_head = g.one("Transpose", ["model.embed_tokens.weight"], perm=[1, 0])
    g.nodes.append(helper.make_node("MatMul", [final, lm_head], ["logits"], name="/lm_head/MatMul"))

    graph = helper.make_graph(g.nodes, f"tiny-proxy-{layout}", inputs, outputs, g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                          producer_name="edgearmor make_fused_fixture.py")
    m.ir_version = 8
    return m


def write_dir(model, layout: str) -> None:
    name, description = LAYOUTS[layout]
    out = f"test/fixtures/{name}"
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(f"{out}/onnx")
    with open(f"{out}/config.json", "w") as f:
        json.dump(model.cfg.to_hf(), f, indent=2)
        f.write("\n")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{TOKENIZER_DIR}/{fn}", f"{out}/{fn}")
    with open(f"{out}/README.md", "w") as f:
        f.write(f"# {name} (test fixture)\n\nThe tiny-proxy test model (random weights, seed 0; see ../tiny-proxy/README.md) in "
                f"onnxruntime-genai's fused layout: {description}. Logits for every position, no EdgeArmor extensions. "
                f"Tokenizer: the embedded model's.\n\nRegenerate: {REGEN}\n")
    # onnx 1.12's checker has no schemas for onnxruntime's contrib ops (SimplifiedLayerNormalization sits in the
    # default domain there), so the graph is saved unchecked; onnxruntime validates it when the tests load it.
    onnx.save(build(model, layout), f"{out}/onnx/model.onnx")
    if layout == "gqa":
        unchecked(quantize_model, f"{out}/onnx/model.onnx", f"{out}/onnx/model_q4.onnx")
        unchecked(to_fp16.to_fp16, f"{out}/onnx/model.onnx", f"{out}/onnx/model_fp16.onnx")
        unchecked(to_fp16.to_fp16, f"{out}/onnx/model_q4.onnx", f"{out}/onnx/model_q4f16.onnx")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", out, "--name", name], check=True)


def unchecked(convert, src: str, dst: str) -> None:
    """quantize.py's or to_fp16.py's conversion without their final onnx.checker pass (see write_dir)."""
    check = onnx.checker.check_model
    onnx.checker.check_model = lambda *a, **k: None
    try:
        convert(src, dst)
    finally:
        onnx.checker.check_model = check


def main():
    with torch.no_grad():
        model = tiny_model()
    for layout in LAYOUTS:
        write_dir(model, layout)


if __name__ == "__main__":
    main()

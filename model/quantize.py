"""Weight-only 4-bit quantization of an exported proxy: onnx/model.onnx -> onnx/model_q4.onnx.

Uses only the `onnx` package (there is no Python onnxruntime here). Every MatMul whose weight input is
  * a 2-D float initializer W [K, N], or
  * Transpose(perm=[1, 0]) of a 2-D float initializer W_t [N, K] (torch.nn.Linear exports this way, and
    the tied lm_head is MatMul(x, Transpose(embed_tokens.weight)))
is replaced by com.microsoft.MatMulNBits (bits=4, block_size=32), the format transformers.js q4 models use:
  B            uint8 [N, n_blocks, 16]   n_blocks = ceil(K / 32); two 4-bit values a byte, low nibble first
                                         along K; K is zero-padded to a whole block
  scales       float32 [N * n_blocks]
  zero_points  uint8 [N * ceil(n_blocks / 2)]  two 4-bit zero points a byte, low nibble first
  dequant      w[n, k] = (q[n, k] - zp[n, k // 32]) * scale[n, k // 32];   Y = A @ dequant(B)^T
Asymmetric per-block min/max quantization (the range always includes 0, as ORT's own quantizer does).
The Gather of the tied embedding keeps the fp32 initializer; the lm_head gets a quantized copy. Transpose
nodes and initializers left without consumers are dropped. The fp32 model is not modified.

The script checks itself with a numpy reference: it unpacks every packed tensor, dequantizes it and reports
the max abs error against the original weights (and that it is within half a quantization step).
The onnxruntime run of the result is checked in Node (test/model/onnx-parity.test.ts).

Usage: python3 model/quantize.py <model dir> [--accuracy-level 0|4]
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BITS = 4
BLOCK = 32


def quantize_weight(w_nk: np.ndarray):
    """w_nk: float32 [N, K] (row n holds the K weights of output n). Returns (B, scales, zp_packed, n_blocks)."""
    n, k = w_nk.shape
    n_blocks = -(-k // BLOCK)
    pad = n_blocks * BLOCK - k
    w = np.pad(w_nk.astype(np.float32), ((0, 0), (0, pad))).reshape(n, n_blocks, BLOCK)
    rmin = np.minimum(w.min(axis=2), 0.0)
    rmax = np.maximum(w.max(axis=2), 0.0)
    scale = (rmax - rmin) / 15.0
    scale = np.where(scale == 0.0, 1.0, scale).astype(np.float32)
    zp = np.clip(np.round(-rmin / scale), 0, 15).astype(np.uint8)  # [N, n_blocks]
    q = np.clip(np.round(w / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)  # [N, nb, 32]
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # [N, nb, 16], low nibble = even k
    zp_pad = np.pad(zp, ((0, 0), (0, n_blocks % 2)), constant_values=0)
    zp_packed = (zp_pad[:, 0::2] | (zp_pad[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
    return packed, scale.reshape(-1), zp_packed, n_blocks


def dequantize_reference(packed: np.ndarray, scales: np.ndarray, zp_packed: np.ndarray, k: int) -> np.ndarray:
    """Independent numpy reference of MatMulNBits' dequantization: returns float32 [N, K]."""
    n, n_blocks, _ = packed.shape
    q = np.empty((n, n_blocks, BLOCK), dtype=np.int32)
    q[..., 0::2] = packed & 0x0F
    q[..., 1::2] = packed >> 4
    zp_bytes = zp_packed.reshape(n, -(-n_blocks // 2))
    zp = np.empty((n, zp_bytes.shape[1] * 2), dtype=np.int32)
    zp[:, 0::2] = zp_bytes & 0x0F
    zp[:, 1::2] = zp_bytes >> 4
    zp = zp[:, :n_blocks]
    w = (q - zp[..., None]).astype(np.float32) * scales.reshape(n, n_blocks)[..., None]
    return w.reshape(n, n_blocks * BLOCK)[:, :k]


def quantize_model(src: str, dst: str, accuracy_level: int = 0) -> dict:
    model = onnx.load(src)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    done: dict[str, tuple[str, str, str, int, int]] = {}  # weight key -> (B, scales, zp, K, N)
    report = {"matmuls": 0, "max_abs_err": 0.0, "max_err_over_half_step": 0.0, "weights": []}
    new_inits: list[TensorProto] = []
    new_nodes = []

    def weight_nk(b_name: str):
        """(key, W [N, K]) if the MatMul's B input is a quantizable weight, else None."""
        t = inits.get(b_name)
        if t is not None and len(t.dims) == 2 and t.data_type == TensorProto.FLOAT:
            return b_name, numpy_helper.to_array(t).T  # stored [K, N]
        p = producer.get(b_name)
        if p is not None and p.op_type == "Transpose" and p.input[0] in inits:
            perm = next((list(a.ints) for a in p.attribute if a.name == "perm"), [1, 0])
            t = inits[p.input[0]]
            if perm == [1, 0] and len(t.dims) == 2 and t.data_type == TensorProto.FLOAT:
                return p.input[0] + ".T", numpy_helper.to_array(t)  # stored [N, K] = transpose of B
        return None

    for node in g.node:
        hit = weight_nk(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if hit is None:
            new_nodes.append(node)
            continue
        key, w = hit
        if key not in done:
            n, k = w.shape
            packed, scales, zpp, n_blocks = quantize_weight(w)
            deq = dequantize_reference(packed, scales, zpp, k)
            err = np.abs(deq - w)
            half_step = np.repeat(scales.reshape(n, n_blocks), BLOCK, axis=1)[:, :k] / 2
            report["max_abs_err"] = max(report["max_abs_err"], float(err.max()))
            report["max_err_over_half_step"] = max(report["max_err_over_half_step"], float((err / half_step).max()))
            report["weights"].append((key, n, k, float(err.max())))
            base = (key[:-2] if key.endswith(".T") else key) + "_Q4"
            names = (base, base + "_scales", base + "_zero_points")
            new_inits += [numpy_helper.from_array(packed, names[0]), numpy_helper.from_array(scales, names[1]),
                          numpy_helper.from_array(zpp, names[2])]
            done[key] = (*names, k, n)
        b, s, z, k, n = done[key]
        new_nodes.append(helper.make_node(
            "MatMulNBits", [node.input[0], b, s, z], list(node.output), name=(node.name or "MatMul") + "_Q4",
            domain="com.microsoft", K=k, N=n, bits=BITS, block_size=BLOCK, accuracy_level=accuracy_level))
        report["matmuls"] += 1

    # Drop nodes whose outputs nobody reads any more (the weight Transposes), then unused initializers.
    graph_outputs = {o.name for o in g.output}
    while True:
        used = {i for n in new_nodes for i in n.input} | graph_outputs
        keep = [n for n in new_nodes if any(o in used for o in n.output)]
        if len(keep) == len(new_nodes):
            break
        new_nodes = keep
    used = {i for n in new_nodes for i in n.input}
    kept_inits = [t for t in g.initializer if t.name in used] + new_inits
    del g.node[:]
    g.node.extend(new_nodes)
    del g.initializer[:]
    g.initializer.extend(kept_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    report["bytes_fp32"] = os.path.getsize(src)
    report["bytes_q4"] = os.path.getsize(dst)
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir", nargs="?", default="public/models/edgearmor-proxy")
    ap.add_argument("--accuracy-level", type=int, default=0, choices=[0, 4],
                    help="MatMulNBits accuracy_level (default 0). 4 lets onnxruntime-node's x86 kernel quantize "
                         "activations to int8: faster, but on the tiny fixture its log-probs then differ from "
                         "onnxruntime-web/wasm (which computes in fp32) by up to 0.26; with 0 every backend "
                         "matches the numpy/PyTorch dequantized reference within 1e-5.")
    args = ap.parse_args()
    src = os.path.join(args.model_dir, "onnx", "model.onnx")
    dst = os.path.join(args.model_dir, "onnx", "model_q4.onnx")
    r = quantize_model(src, dst, args.accuracy_level)
    for key, n, k, e in r["weights"]:
        print(f"  {key:48s} N={n:5d} K={k:5d} max|w - deq(q)| = {e:.3e}")
    print(f"replaced {r['matmuls']} MatMuls; numpy reference dequant max abs err {r['max_abs_err']:.3e} "
          f"(max {r['max_err_over_half_step']:.3f} of half a step; must be <= 1)")
    print(f"{dst}: {r['bytes_q4']} bytes ({r['bytes_q4'] / r['bytes_fp32']:.1%} of fp32 {r['bytes_fp32']})")
    if r["max_err_over_half_step"] > 1.0 + 1e-4:
        raise SystemExit("dequantization error exceeds half a quantization step")


if __name__ == "__main__":
    main()

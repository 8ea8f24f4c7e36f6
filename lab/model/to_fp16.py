"""Convert an fp32 ONNX decoder to fp16 (onnx-community's model_fp16.onnx): every float initializer,
constant, Cast target, graph input and output becomes float16. Constants below fp16's range are
clamped to -65504 (finfo(fp16).min) so the attention mask stays finite, as fp16 exports do.

What transformers computes in float32 whatever the model's dtype stays float32, between Casts, as it does
in exports traced from a float16 model: the rotary angles (position x inverse frequency, then cos and sin;
LlamaRotaryEmbedding turns autocast off), RMSNorm's variance and normalisation (LlamaRMSNorm upcasts the
hidden state and casts back before the weight) and the attention softmax (softmax(..., dtype=float32)).
In float16 the angle alone is off by up to position x 2^-11 radians, half a radian at position 1,000.
Fused graphs compute these inside their kernels (RotaryEmbedding/GroupQueryAttention from float32 caches,
SimplifiedLayerNormalization in float32), so nothing is kept there.

Uses only the `onnx` package. Usage: python3 lab/model/to_fp16.py <src.onnx> <dst.onnx>
"""
from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FP16_MAX = 65504.0

# The ops of a decomposed RMSNorm before its weight: x * 1 / sqrt(mean(x^2) + eps).
NORM_OPS = {"Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Reciprocal"}
# The ops between a float Cast of position_ids and the rotary cos and sin.
ROTARY_OPS = {"Cast", "Unsqueeze", "Mul", "MatMul", "Concat", "Transpose", "Reshape", "Expand", "Cos", "Sin"}


def _half(t: TensorProto) -> TensorProto:
    a = numpy_helper.to_array(t)
    return numpy_helper.from_array(np.clip(a, -FP16_MAX, FP16_MAX).astype(np.float16), t.name)


def _is_norm(n: onnx.NodeProto, initializers: set[str]) -> bool:
    scope = n.name.rsplit("/", 1)[0]
    in_norm = scope.endswith("layernorm") or scope.endswith("/norm")
    # The weight's Mul reads an initializer: it runs in the model's dtype, after the cast back.
    return in_norm and n.op_type in NORM_OPS and not any(i in initializers for i in n.input)


def float32_nodes(g: onnx.GraphProto) -> set[int]:
    """Indexes of the nodes transformers computes in float32 (module docstring), and the Constants only they read."""
    initializers = {t.name for t in g.initializer}
    consumers: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers[x].append(i)
    keep = {i for i, n in enumerate(g.node) if n.op_type == "Softmax" or _is_norm(n, initializers)}
    # Rotary: forward from a float Cast of position_ids to the Cos and Sin it feeds.
    todo = [i for i, n in enumerate(g.node) if n.op_type == "Cast" and "position_ids" in n.input and any(a.name == "to" and a.i == TensorProto.FLOAT for a in n.attribute)]
    while todo:
        i = todo.pop()
        if i in keep or g.node[i].op_type not in ROTARY_OPS:
            continue
        keep.add(i)
        if g.node[i].op_type in ("Cos", "Sin"):
            continue
        for out in g.node[i].output:
            todo.extend(consumers[out])
    for i, n in enumerate(g.node):
        if n.op_type == "Constant" and all(c in keep for out in n.output for c in consumers[out]) and consumers[n.output[0]]:
            keep.add(i)
    return keep


def to_fp16(src: str, dst: str) -> None:
    m = onnx.load(src)
    g = m.graph
    keep = float32_nodes(g)
    kept_names = {x for i in keep for x in g.node[i].input}
    converted = {x for i, n in enumerate(g.node) if i not in keep for x in n.input}
    for i, t in enumerate(g.initializer):
        # An initializer only float32 nodes read stays float32 (rotary inverse frequencies).
        if t.data_type == TensorProto.FLOAT and (t.name in converted or t.name not in kept_names):
            g.initializer[i].CopyFrom(_half(t))
    for i, n in enumerate(g.node):
        if i in keep:
            continue
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(_half(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    _cast_boundaries(g, keep)
    del g.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def _cast_boundaries(g: onnx.GraphProto, keep: set[int]) -> None:
    """Casts float16 tensors into the float32 nodes (a Cast node takes any type) and their results back out."""
    produced_by = {out: i for i, n in enumerate(g.node) for out in n.output}
    float16 = {v.name for v in g.input if v.type.tensor_type.elem_type == TensorProto.FLOAT16}
    float16 |= {t.name for t in g.initializer if t.data_type == TensorProto.FLOAT16}
    nodes = list(g.node)
    up: dict[str, str] = {}
    down: dict[str, str] = {}
    for i in sorted(keep):
        n = nodes[i]
        if n.op_type in ("Cast", "Constant"):
            continue
        for k, x in enumerate(n.input):
            if x in float16 or (x in produced_by and produced_by[x] not in keep):
                up.setdefault(x, f"{x}/float32")
                n.input[k] = up[x]
    graph_outputs = {v.name for v in g.output}
    for i in sorted(keep):
        for out in nodes[i].output:
            if out in graph_outputs:
                raise ValueError(f"{nodes[i].name} computes graph output {out} in float32; this converter does not rename outputs")
            readers = [n for j, n in enumerate(nodes) if j not in keep and out in n.input]
            if readers:
                down[out] = f"{out}/float16"
            for n in readers:
                n.input[:] = [down[out] if x == out else x for x in n.input]
    casts = [helper.make_node("Cast", [x], [y], name=f"{y}/Cast", to=TensorProto.FLOAT) for x, y in up.items()]
    casts += [helper.make_node("Cast", [x], [y], name=f"{y}/Cast", to=TensorProto.FLOAT16) for x, y in down.items()]
    # Topological order: each Cast right after the node that makes its input (graph inputs and initializers: first).
    order = [c for c in casts if c.input[0] not in produced_by]
    after: dict[int, list[onnx.NodeProto]] = defaultdict(list)
    for c in casts:
        if c.input[0] in produced_by:
            after[produced_by[c.input[0]]].append(c)
    for i, n in enumerate(nodes):
        order.append(n)
        order.extend(after[i])
    del g.node[:]
    g.node.extend(order)


if __name__ == "__main__":
    to_fp16(sys.argv[1], sys.argv[2])

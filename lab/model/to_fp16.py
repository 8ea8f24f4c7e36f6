"""Convert an fp32 ONNX decoder to fp16 (onnx-community's model_fp16.onnx): every float initializer,
constant, Cast target, graph input and output becomes float16. Constants below fp16's range are
clamped to -65504 (finfo(fp16).min) so the attention mask stays finite, as fp16 exports do.

Uses only the `onnx` package. Usage: python3 lab/model/to_fp16.py <src.onnx> <dst.onnx>
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

FP16_MAX = 65504.0


def _half(t: TensorProto) -> TensorProto:
    a = numpy_helper.to_array(t)
    return numpy_helper.from_array(np.clip(a, -FP16_MAX, FP16_MAX).astype(np.float16), t.name)


def to_fp16(src: str, dst: str) -> None:
    m = onnx.load(src)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(_half(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(_half(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, dst)


if __name__ == "__main__":
    to_fp16(sys.argv[1], sys.argv[2])

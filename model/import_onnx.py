"""Turns a committed fp32 export back into a training run directory (config.json, model.pt and the
tokenizer), so a fresh clone can fine-tune the embedded model without the run that trained it.

    /usr/bin/python3 model/import_onnx.py --model public/models/edgearmor-proxy --out model/runs/base
"""
from __future__ import annotations

import argparse
import os
import shutil

import onnx
import torch
from onnx import numpy_helper

from export_onnx import load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="public/models/edgearmor-proxy")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{args.model}/{f}", f"{args.out}/{f}")
    graph = onnx.load(f"{args.model}/onnx/model.onnx").graph
    # The export names every weight after its module path under the `model.` wrapper.
    state = {i.name.removeprefix("model."): torch.from_numpy(numpy_helper.to_array(i).copy())
             for i in graph.initializer if i.name.startswith("model.")}
    torch.save(state, f"{args.out}/model.pt")
    load(args.out)  # fails loudly when a weight is missing or misshapen
    print(f"imported {len(state)} tensors from {args.model} into {args.out}")


if __name__ == "__main__":
    main()

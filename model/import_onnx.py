"""Turns a committed fp32 export back into a training run directory (config.json, model.pt and the
tokenizer), so a fresh clone can fine-tune the embedded model without the run that trained it.

    /usr/bin/python3 model/import_onnx.py --model public/models/edgearmor-proxy --out lab/runs/base
"""
from __future__ import annotations

import argparse
import os
import shutil

import onnx
import torch
from onnx import numpy_helper

from export_onnx import load


def import_model(model_dir: str, out: str) -> int:
    """Writes `out`/{config.json, tokenizer.json, tokenizer_config.json, model.pt} from the export in
    `model_dir`; returns the number of tensors imported."""
    os.makedirs(out, exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{model_dir}/{f}", f"{out}/{f}")
    graph = onnx.load(f"{model_dir}/onnx/model.onnx").graph
    # The export names every weight after its module path under the `model.` wrapper.
    state = {i.name.removeprefix("model."): torch.from_numpy(numpy_helper.to_array(i).copy())
             for i in graph.initializer if i.name.startswith("model.")}
    torch.save(state, f"{out}/model.pt")
    load(out)  # fails loudly when a weight is missing or misshapen
    return len(state)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="public/models/edgearmor-proxy")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n = import_model(args.model, args.out)
    print(f"imported {n} tensors from {args.model} into {args.out}")


if __name__ == "__main__":
    main()

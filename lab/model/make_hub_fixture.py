"""Build test/fixtures/tiny-proxy-hub/: the tiny test model (same seeded weights as tiny-proxy) in the
layout onnx-community publishes decoders in, for the engine's hub-model tests.

  onnx/model.onnx + onnx/model.onnx_data   fp32, every initializer in the external data file
  onnx/model_q4.onnx                       MatMulNBits 4-bit (quantize.py)
  onnx/model_fp16.onnx                     fp16 (to_fp16.py)
  onnx/model_q4f16.onnx                    q4 with float16 activations and scales (to_fp16.py over model_q4)
No EdgeArmor extensions: no num_logits_to_keep (logits for every position), no attention outputs.
Also test/fixtures/tiny-proxy-hub-nopos/: the same model without a position_ids input, q4 only.
Tokenizer files are the embedded model's (same 4096-token vocabulary).

Usage: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_hub_fixture.py
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "model")  # the shipped modules
sys.path[:0] = [HERE, MODEL]
from export_onnx import export  # noqa: E402
from make_tiny_fixture import tiny_model  # noqa: E402
from quantize import quantize_model  # noqa: E402
from to_fp16 import to_fp16  # noqa: E402

OUT = "test/fixtures/tiny-proxy-hub"
NAME = "tiny-proxy-hub"
NOPOS_OUT = "test/fixtures/tiny-proxy-hub-nopos"
NOPOS_NAME = "tiny-proxy-hub-nopos"

NOPOS_README = """# tiny-proxy-hub-nopos (test fixture)

The tiny-proxy-hub model exported without a position_ids input (positions from the attention mask,
as exports of models that never took position ids compute them), q4 only. Built by
lab/model/make_hub_fixture.py with ../tiny-proxy-hub.
"""
TOKENIZER_DIR = "public/models/edgearmor-proxy"

README = """# tiny-proxy-hub (test fixture)

The tiny-proxy test model (random weights, seed 0; see ../tiny-proxy/README.md) in the onnx-community
layout: fp32 with its weights in onnx/model.onnx_data, q4 (MatMulNBits), fp16 and q4f16, without EdgeArmor's
export extensions (no num_logits_to_keep, no attention outputs). Tokenizer: the embedded model's.

Regenerate: `LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 lab/model/make_hub_fixture.py`
"""


def main():
    model = tiny_model()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(f"{OUT}/onnx")
    with open(f"{OUT}/config.json", "w") as f:
        json.dump(model.cfg.to_hf(), f, indent=2)
        f.write("\n")
    with open(f"{OUT}/README.md", "w") as f:
        f.write(README)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{TOKENIZER_DIR}/{name}", f"{OUT}/{name}")
    export(model, f"{OUT}/onnx/model.onnx", extensions=False, external_data="model.onnx_data")
    quantize_model(f"{OUT}/onnx/model.onnx", f"{OUT}/onnx/model_q4.onnx")
    to_fp16(f"{OUT}/onnx/model.onnx", f"{OUT}/onnx/model_fp16.onnx")
    to_fp16(f"{OUT}/onnx/model_q4.onnx", f"{OUT}/onnx/model_q4f16.onnx")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", OUT, "--name", NAME], check=True)

    # A second layout: no position_ids input (positions from the attention mask), q4 only.
    if os.path.isdir(NOPOS_OUT):
        shutil.rmtree(NOPOS_OUT)
    os.makedirs(f"{NOPOS_OUT}/onnx")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{OUT}/{name}", f"{NOPOS_OUT}/{name}")
    with open(f"{NOPOS_OUT}/README.md", "w") as f:
        f.write(NOPOS_README)
    with tempfile.TemporaryDirectory() as tmp:
        export(model, f"{tmp}/model.onnx", extensions=False, position_ids=False)
        quantize_model(f"{tmp}/model.onnx", f"{NOPOS_OUT}/onnx/model_q4.onnx")
    subprocess.run([sys.executable, f"{MODEL}/manifest.py", NOPOS_OUT, "--name", NOPOS_NAME], check=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The AgentDojo held-out-suite base models (issue 33), built from the weights kept in git: s-noslack and
# s-nobanking, the embedded shape (S) trained on the GPU's broad recipe with every trace of one suite left
# out (lab/model/gpu-trials.md, "the second loan"). Each becomes a model directory `edgearmor adapt
# --base-model` and `edgearmor eval --model` take: config, tokenizer, onnx/model.onnx (fp32, what adapt
# fine-tunes), onnx/model_q4.onnx (what the guard runs) and the integrity manifest.
#
#   bash lab/model/suite-bases.sh [OUT=lab/runs]    # writes OUT/base-noslack, OUT/base-nobanking
#
# The cross-suite protocol: adapt one of them on its left-out suite's attack-free traces, evaluate that
# suite's dev cases (never adapted on) with the base and the adapted model.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-lab/runs}
PY=${PY:-/usr/bin/python3}
export PYTHONWARNINGS=ignore::UserWarning  # torch.onnx shape-inference notes, not errors
for suite in slack banking; do
  kept=lab/models/s-no$suite
  run=$(mktemp -d)
  cp "$kept"/config.json "$kept"/tokenizer.json "$kept"/tokenizer_config.json "$run"/
  # fp16 on disk (half the bytes in git); the export's loader copies it into fp32 weights, an exact upcast.
  cp "$kept/model-fp16.pt" "$run/model.pt"
  $PY model/export_onnx.py --run "$run" --out "$OUT/base-no$suite" > /dev/null
  $PY model/quantize.py "$OUT/base-no$suite" > /dev/null
  cp "$kept/train-log.json" "$OUT/base-no$suite/"
  $PY model/manifest.py "$OUT/base-no$suite" --name "edgearmor-proxy-no$suite" > /dev/null
  rm -r "$run"
  echo "$OUT/base-no$suite"
done

#!/usr/bin/env bash
# Turns a trained run into the files the engine loads: ONNX export, 4-bit quantization, the
# leave-one-out report on the generator's test split, golden values, the manifest; then it checks the
# product's acceptance cases. build.sh ends with it; a GPU run brought back (lab/model/gpu-broad.sh) is
# shipped with it too:
#
#   bash lab/model/ship.sh lab/runs/gpu-m-full [edgearmor-proxy]
#
# The committed model files stay within 64 MB: when fp32 and q4 together are larger, fp32
# (onnx/model.onnx) is left out and the manifest lists q4 alone (parity is then tested on the fixture).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:?usage: ship.sh RUN_DIR [NAME]}
NAME=${2:-edgearmor-proxy}
OUT=public/models/$NAME
PY=${PY:-/usr/bin/python3}
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -f data/test.jsonl ] || npx tsx src/cli/scenarios.ts --split test --n 1000 --seed 3 --out data/test.jsonl

echo "== export + quantize"
$PY model/export_onnx.py --run "$RUN" --out "$OUT"
$PY model/quantize.py "$OUT"
if [ "$(du -cb "$OUT"/onnx/*.onnx | tail -1 | cut -f1)" -gt 64000000 ]; then
  echo "fp32 and q4 together exceed 64 MB: shipping q4 only"
  rm "$OUT/onnx/model.onnx"
fi

echo "== leave-one-out detection rates on the generator's test split"
$PY lab/model/score_loo.py --run "$RUN" --cases data/test.jsonl --tool-loo --out "$RUN/test-scores.jsonl"
$PY lab/model/loo_report.py "$RUN/test-scores.jsonl" --json "$RUN/loo-report.json"
cp "$RUN/train-log.json" "$RUN/loo-report.json" "$OUT/"

echo "== golden values for the engine and parity tests"
# The test suite's goldens belong to the embedded model: a build under another NAME (a reproducibility
# rerun, an experiment) keeps its goldens in its run directory instead of overwriting them.
if [ "$NAME" = edgearmor-proxy ]; then GOLDEN_DIR=test/fixtures; else GOLDEN_DIR=$RUN; fi
$PY lab/model/golden_engine.py --run "$RUN" --cases data/test.jsonl --out "$GOLDEN_DIR/engine-golden.json"
$PY lab/model/golden.py --run "$RUN" --name "$NAME" --out "$GOLDEN_DIR/golden-$NAME.json"

$PY model/manifest.py "$OUT"

echo "== the product's acceptance cases (README seed cases, demo pair, extension pages; q4, TypeScript guard)"
# Not fatal: build.sh's CPU recipe ships under other names and does not detect. A model that fails one
# is not shipped as the embedded model, whatever its numbers (gpu-trials.md): git checkout public/models.
npx tsx lab/eval/acceptance.ts --model "$OUT" || echo "!! $OUT fails acceptance cases: not for shipping as the embedded model"

#!/usr/bin/env bash
# Rebuilds the embedded proxy model from scratch: scenario data, tokenizer, training, ONNX export,
# 4-bit quantization, leave-one-out detection rates, manifest. About 60-75 minutes on 2 CPU cores.
#
#   npm run model:build            (or: bash model/build.sh)
#
# Needs Debian's python3-torch, python3-onnx, python3-numpy, python3-regex and libopenblas0-openmp
# (apt-get install -y python3-torch python3-onnx python3-numpy python3-regex libopenblas0-openmp).
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=${NAME:-edgearmor-proxy}
RUN=model/runs/$NAME
OUT=public/models/$NAME
TRACES=${TRACES:-../shared/datasets/agentdojo/train-traces.jsonl}
PY=/usr/bin/python3
# OpenBLAS with OpenMP threads: ~40x the reference BLAS that torch links by default (SETUP.md).
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1

mkdir -p data "$RUN"
start=$(date +%s)
echo "== scenarios"
npx tsx src/cli/scenarios.ts --split train --n "${N_TRAIN:-9000}" --seed 1 --out data/train.jsonl
npx tsx src/cli/scenarios.ts --split validation --n 600 --seed 2 --out data/validation.jsonl
npx tsx src/cli/scenarios.ts --split test --n 1000 --seed 3 --out data/test.jsonl

echo "== tokenizer + training"
$PY model/train.py --train data/train.jsonl --validation data/validation.jsonl --traces "$TRACES" \
  --out "$RUN" --steps "${STEPS:-850}" | tee "$RUN/train.out"

echo "== export + quantize"
$PY model/export_onnx.py --run "$RUN" --out "$OUT"
$PY model/quantize.py "$OUT"

echo "== leave-one-out detection rates on the held-out test split"
$PY model/score_loo.py --run "$RUN" --cases data/test.jsonl --tool-loo --out "$RUN/test-scores.jsonl"
$PY model/loo_report.py "$RUN/test-scores.jsonl" --json "$RUN/loo-report.json"
cp "$RUN/train-log.json" "$RUN/loo-report.json" "$OUT/"

echo "== golden values for the engine and parity tests"
# The test suite's goldens belong to the embedded model: a build under another NAME (a reproducibility
# rerun, an experiment) keeps its goldens in its run directory instead of overwriting them.
if [ "$NAME" = edgearmor-proxy ]; then GOLDEN_DIR=test/fixtures; else GOLDEN_DIR=$RUN; fi
$PY model/golden_engine.py --run "$RUN" --cases data/test.jsonl --out "$GOLDEN_DIR/engine-golden.json"
$PY model/golden.py --run "$RUN" --name "$NAME" --out "$GOLDEN_DIR/golden-$NAME.json"

$PY model/manifest.py "$OUT"
echo "== done in $(( ($(date +%s) - start) / 60 )) minutes: $OUT"

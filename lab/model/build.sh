#!/usr/bin/env bash
# Rebuilds the embedded proxy model from scratch: scenario data, tokenizer, training, ONNX export,
# 4-bit quantization, leave-one-out detection rates, manifest. About 60-75 minutes on 2 CPU cores.
#
#   npm run model:build            (or: bash lab/model/build.sh)
#
# Needs Debian's python3-torch, python3-onnx, python3-numpy, python3-regex and libopenblas0-openmp
# (apt-get install -y python3-torch python3-onnx python3-numpy python3-regex libopenblas0-openmp).
set -euo pipefail
cd "$(dirname "$0")/../.."

NAME=${NAME:-edgearmor-proxy}
RUN=lab/runs/$NAME
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

bash lab/model/ship.sh "$RUN" "$NAME"
echo "== done in $(( ($(date +%s) - start) / 60 )) minutes: $OUT"

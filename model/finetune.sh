#!/usr/bin/env bash
# Fine-tunes the GPU-trained proxy on 2 CPU cores with request counterfactuals (data.request_counterfactual)
# and exports it as the embedded model: what the committed weights are. About 45 minutes here.
#
#   bash model/finetune.sh                      (BASE=model/runs/edgearmor-proxy-gpu, from model/gpu-train.sh)
#   BASE=import bash model/finetune.sh          (start from the committed export instead)
#
# Data as build.sh writes it (data/{train,validation,test}.jsonl); the same Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=${NAME:-edgearmor-proxy}
BASE=${BASE:-model/runs/edgearmor-proxy-gpu}
RUN=model/runs/${RUN_NAME:-$NAME-ft}
OUT=public/models/$NAME
TRACES=${TRACES:-../shared/datasets/agentdojo/train-traces.jsonl}
MINUTES=${MINUTES:-30}
PY=/usr/bin/python3
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1

start=$(date +%s)
mkdir -p "$RUN"
if [ "$BASE" = import ]; then
  BASE=model/runs/$NAME-imported
  $PY model/import_onnx.py --model "$OUT" --out "$BASE"
elif [ ! -f "$BASE/model.pt" ]; then
  echo "no base weights in $BASE: train them with model/gpu-train.sh, or BASE=import to start from $OUT" >&2
  exit 2
fi
for split in train validation test; do
  [ -f "data/$split.jsonl" ] || { echo "data/$split.jsonl is missing: build.sh's scenario step writes it" >&2; exit 2; }
done

echo "== fine-tuning $BASE for $MINUTES minutes"
$PY model/train.py --init "$BASE" --train data/train.jsonl --validation data/validation.jsonl --traces "$TRACES" \
  --out "$RUN" --counterfactuals 0.5 --request-counterfactuals 1.0 --steps 100000 --warmup 20 \
  --time-schedule --max-minutes "$MINUTES" --lr 5e-4 | tee "$RUN/train.out"

echo "== leave-one-out on the validation and test splits"
$PY model/score_loo.py --run "$RUN" --cases data/validation.jsonl --tool-loo --out "$RUN/validation-scores.jsonl"
$PY model/loo_report.py "$RUN/validation-scores.jsonl" --json "$RUN/validation-report.json"
$PY model/score_loo.py --run "$RUN" --cases data/test.jsonl --tool-loo --out "$RUN/test-scores.jsonl"
$PY model/loo_report.py "$RUN/test-scores.jsonl" --json "$RUN/loo-report.json"

echo "== export + quantize"
$PY model/export_onnx.py --run "$RUN" --out "$OUT"
$PY model/quantize.py "$OUT"
cp "$RUN/train-log.json" "$RUN/loo-report.json" "$OUT/"

if [ "$NAME" = edgearmor-proxy ]; then GOLDEN_DIR=test/fixtures; else GOLDEN_DIR=$RUN; fi
$PY model/golden_engine.py --run "$RUN" --cases data/test.jsonl --out "$GOLDEN_DIR/engine-golden.json"
$PY model/golden.py --run "$RUN" --name "$NAME" --out "$GOLDEN_DIR/golden-$NAME.json"
$PY model/manifest.py "$OUT"
echo "== done in $(( ($(date +%s) - start) / 60 )) minutes: $OUT"

#!/usr/bin/env bash
# Fine-tunes a trained proxy on 2 CPU cores with request counterfactuals (data.request_counterfactual) and
# measures it: leave-one-out on the validation and test splits (PyTorch), then an export + q4 in the run
# directory for the guard's own evaluation (`npm run eval -- <cases> --model lab/runs/<run>/export`).
# It never touches the embedded model. About 45 minutes here. The experiment and its result (better on the
# generator's splits, worse on AgentDojo dev; not shipped) are in lab/model/gpu-trials.md.
#
#   bash lab/model/finetune.sh                 (BASE=lab/runs/edgearmor-proxy-gpu, from lab/model/gpu-train.sh)
#   BASE=import bash lab/model/finetune.sh     (start from the committed export, via model/import_onnx.py)
#   TRACE_RQ=1.0 bash lab/model/finetune.sh    (also one request counterfactual per AgentDojo run with no attack)
#
# Data as build.sh writes it (data/{train,validation,test}.jsonl); the same Debian packages.
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE=${BASE:-model/runs/edgearmor-proxy-gpu}
RUN=lab/runs/${RUN_NAME:-finetune-rq}
TRACES=${TRACES:-../shared/datasets/agentdojo/train-traces.jsonl}
MINUTES=${MINUTES:-30}
RQ=${RQ:-1.0}
TRACE_RQ=${TRACE_RQ:-0}
PY=/usr/bin/python3
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1

start=$(date +%s)
mkdir -p "$RUN"
if [ "$BASE" = import ]; then
  BASE=$RUN-base
  $PY model/import_onnx.py --model public/models/edgearmor-proxy --out "$BASE"
elif [ ! -f "$BASE/model.pt" ]; then
  echo "no base weights in $BASE: train them with lab/model/gpu-train.sh, or BASE=import to start from the committed export" >&2
  exit 2
fi
for split in train validation test; do
  [ -f "data/$split.jsonl" ] || { echo "data/$split.jsonl is missing: build.sh's scenario step writes it" >&2; exit 2; }
done

echo "== fine-tuning $BASE for $MINUTES minutes"
$PY model/train.py --init "$BASE" --train data/train.jsonl --validation data/validation.jsonl --traces "$TRACES" \
  --out "$RUN" --counterfactuals 0.5 --request-counterfactuals "$RQ" --trace-request-counterfactuals "$TRACE_RQ" \
  --steps 100000 --warmup 20 --time-schedule --max-minutes "$MINUTES" --lr 5e-4 | tee "$RUN/train.out"

echo "== leave-one-out on the validation and test splits"
for split in validation test; do
  $PY lab/model/score_loo.py --run "$RUN" --cases "data/$split.jsonl" --tool-loo --out "$RUN/$split-scores.jsonl"
  $PY lab/model/loo_report.py "$RUN/$split-scores.jsonl" --json "$RUN/$split-report.json"
done

echo "== export + quantize into $RUN/export"
$PY model/export_onnx.py --run "$RUN" --out "$RUN/export"
$PY model/quantize.py "$RUN/export"
$PY model/manifest.py "$RUN/export"
echo "== done in $(( ($(date +%s) - start) / 60 )) minutes: npm run eval -- data/validation.jsonl --model $RUN/export"

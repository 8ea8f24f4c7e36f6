#!/usr/bin/env bash
# Trains the embedded proxy's architecture on one GPU (torch 2, bf16 autocast) and scores
# leave-one-out on the validation and test splits there. The CPU recipe (build.sh) stays the
# reproducible default; this is how the committed GPU-trained weights were made.
#
#   DATA=.gpu bash model/gpu-train.sh [cf-rate ...]     one run per counterfactual rate, concurrently
#
# DATA holds train.jsonl.xz (generator train split, 60,000 cases, seed 1), validation.jsonl.xz,
# test.jsonl.xz and traces.jsonl.xz (the AgentDojo training traces). Results land in
# model/runs/gpu-cf<rate>/ and, tarred in 15 MB parts, in $OUT when set.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-.gpu}
MINUTES=${MINUTES:-5.5}
DEVICE=${DEVICE:-cuda}
EXTRA=${EXTRA:-}
SCORE_EXTRA=${SCORE_EXTRA:-}
RATES=("${@:-0.5}")
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || true
pids=()
for cf in "${RATES[@]}"; do
  run=model/runs/gpu-cf$cf
  mkdir -p "$run"
  python3 model/train.py --device "$DEVICE" --bf16 --workers $((16 / ${#RATES[@]})) --threads 2 \
    --train "$DATA/train.jsonl.xz" --validation "$DATA/validation.jsonl.xz" --traces "$DATA/traces.jsonl.xz" \
    --tokenizer public/models/edgearmor-proxy --out "$run" --counterfactuals "$cf" \
    --steps 100000 --warmup 150 --time-schedule --max-minutes "$MINUTES" --batch-tokens 65536 --lr 3e-3 --eval-every 200 $EXTRA \
    > "$run/train.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { tail -30 model/runs/gpu-cf*/train.out; exit 1; }; done
if [ -n "${OUT:-}" ]; then  # the weights first, so a slow scoring step cannot lose them
  tar cf - model/runs/gpu-cf* | xz -1 -T16 | split -b 15M - "$OUT/runs.tar.xz.part-"
fi
spids=()
for cf in "${RATES[@]}"; do
  run=model/runs/gpu-cf$cf
  python3 -c "import json,sys; l=json.load(open(sys.argv[1])); print({k: l.get(k) for k in ('steps_done','epochs','tokens_seen','train_tokens','train_minutes','best_step','validation_loss','validation_agent_loss','trace_validation_loss','trace_validation_agent_loss')})" "$run/train-log.json"
  for split in validation test; do
    python3 model/score_loo.py --device "$DEVICE" $SCORE_EXTRA --run "$run" --cases "$DATA/$split.jsonl.xz" --tool-loo \
      --out "$run/$split-scores.jsonl" > /dev/null &
    spids+=($!)
  done
done
for p in "${spids[@]}"; do wait "$p"; done
for cf in "${RATES[@]}"; do
  for split in validation test; do
    echo "== cf $cf $split"; python3 model/loo_report.py "model/runs/gpu-cf$cf/$split-scores.jsonl" | grep -E 'seed|name '
  done
done
if [ -n "${OUT:-}" ]; then
  tar cf - model/runs/gpu-cf*/*-scores.jsonl | xz -6 -T16 > "$OUT/scores.tar.xz"
  ls -la "$OUT"
fi

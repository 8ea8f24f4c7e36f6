#!/usr/bin/env bash
# Trains the embedded proxy's architecture on one GPU (torch 2, bf16 autocast), several runs at once,
# and scores leave-one-out there on the choice sets: the generator's validation split and AgentDojo
# guard cases cut from held-out training runs (model/agentdojo.py). The CPU recipe (build.sh) stays
# the reproducible default; lab/model/gpu-trials.md records what each GPU session ran and found.
#
#   DATA=.gpu bash lab/model/gpu-train.sh "name train-args..." ["name train-args..." ...]
#
# e.g. DATA=.gpu bash lab/model/gpu-train.sh "cf0.5 --counterfactuals 0.5 --seed 1"
#
# DATA holds train.jsonl.xz (generator train split, 60,000 cases, seed 1), validation.jsonl.xz,
# traces.jsonl.xz (the AgentDojo training traces) and, when a run holds traces out, adv-val.jsonl.xz
# (python3 model/agentdojo.py --out $DATA/adv-val.jsonl.xz). Runs land in lab/runs/gpu-<name>/ and,
# with $OUT set, their weights (fp16, to fit the transfer), scores and copy probe in $OUT/runs.tar.xz.part-*.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-.gpu}
MINUTES=${MINUTES:-5}
DEVICE=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1
[ $# -gt 0 ] || { echo "usage: gpu-train.sh \"name train-args...\" ..." >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || true
names=()
pids=()
for spec in "$@"; do
  read -r name args <<<"$spec"
  run=lab/runs/gpu-$name
  mkdir -p "$run"
  names+=("$name")
  # shellcheck disable=SC2086 # the run's arguments are words
  python3 model/train.py --device "$DEVICE" --bf16 --workers $((16 / $#)) --threads 2 \
    --train "$DATA/train.jsonl.xz" --validation "$DATA/validation.jsonl.xz" --traces "$DATA/traces.jsonl.xz" \
    --tokenizer public/models/edgearmor-proxy --out "$run" \
    --steps 100000 --warmup 150 --time-schedule --max-minutes "$MINUTES" --batch-tokens 65536 --lr 3e-3 \
    --eval-every 200 $args > "$run/train.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { tail -30 lab/runs/gpu-*/train.out; exit 1; }; done
# Weights leave first (fp16, to fit the transfer), so a scoring pass cut short by the call's time limit
# loses only scores, never a run.
for name in "${names[@]}"; do
  run=lab/runs/gpu-$name
  python3 -c "import torch,sys; sd=torch.load(sys.argv[1]); torch.save({k: v.half() for k, v in sd.items()}, sys.argv[2])" \
    "$run/model.pt" "$run/model-fp16.pt"
done
pack() { [ -z "${OUT:-}" ] || tar cf - --exclude=model.pt lab/runs/gpu-* | xz -1 -T16 | split -b 15M - "$OUT/$1.tar.xz.part-"; }
pack runs
spids=()
for name in "${names[@]}"; do
  run=lab/runs/gpu-$name
  python3 lab/model/score_loo.py --device "$DEVICE" --run "$run" --cases "$DATA/validation.jsonl.xz" --tool-loo \
    --out "$run/validation-scores.jsonl" > /dev/null &
  spids+=($!)
  if [ -f "$DATA/adv-val.jsonl.xz" ]; then
    python3 lab/model/score_loo.py --device "$DEVICE" --run "$run" --cases "$DATA/adv-val.jsonl.xz" \
      --out "$run/adv-val-scores.jsonl" > /dev/null &
    spids+=($!)
  fi
  # How well it copies values from context into the call (lab/model/copy_probe.py), on validation cases.
  python3 lab/model/copy_probe.py --device "$DEVICE" --run "$run" --cases "$DATA/validation.jsonl.xz" --limit 300 \
    > "$run/copy-probe.json" &
  spids+=($!)
done
for p in "${spids[@]}"; do wait "$p"; done
for name in "${names[@]}"; do
  run=lab/runs/gpu-$name
  python3 -c "import json,sys; l=json.load(open(sys.argv[1])); print(sys.argv[2], {k: l.get(k) for k in ('steps_done','tokens_seen','best_step','validation_loss','trace_validation_loss')})" "$run/train-log.json" "$name"
  echo "copy probe: $(cat "$run/copy-probe.json")"
  for split in validation adv-val; do
    [ -f "$run/$split-scores.jsonl" ] || continue
    echo "== $name $split"; python3 lab/model/loo_report.py "$run/$split-scores.jsonl" | grep -E 'seed|name |user_weight_2'
  done
done
rm -f "${OUT:-/nonexistent}"/runs.tar.xz.part-*
pack runs
[ -z "${OUT:-}" ] || ls -la "$OUT"

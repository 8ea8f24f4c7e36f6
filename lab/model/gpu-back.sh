#!/usr/bin/env bash
# After a device call of lab/model/gpu-call.sh, here: unpacks what came back (the call's files_at folder) into
# lab/runs, joins each run's fp16 weight parts into its model.pt (loading casts them to fp32), and exports every
# run as a model directory the guard loads (lab/runs/gpu-<run>/export: fp32 ONNX, q4, manifest), for
# `npm run eval -- <set> --model lab/runs/gpu-<run>/export` and lab/eval/acceptance.ts. A run that ships goes
# through lab/model/ship.sh instead.
#
#   bash lab/model/gpu-back.sh <folder>        # RUNS (default lab/runs) must be where the device's RUNS was
set -euo pipefail
cd "$(dirname "$0")/../.."
FROM=${1:?usage: gpu-back.sh FOLDER, where the device call put its files}
RUNS=${RUNS:-lab/runs}
PY=${PY:-/usr/bin/python3}
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Logs, configs, tokenizers and score files, under the paths the device wrote them at (relative to its root).
tar xf "$FROM/meta.tar.xz" -C "${META_ROOT:-.}"
for first in "$FROM"/*.fp16.pt.part-00; do
  [ -e "$first" ] || { echo "no weights in $FROM" >&2; exit 1; }
  name=$(basename "$first" .fp16.pt.part-00)
  run=$RUNS/gpu-$name
  cat "$FROM/$name".fp16.pt.part-* > "$run/model-fp16.pt"
  cp "$run/model-fp16.pt" "$run/model.pt"
  $PY model/export_onnx.py --run "$run" --out "$run/export" > /dev/null
  $PY model/quantize.py "$run/export" > /dev/null
  $PY model/manifest.py "$run/export" --name "gpu-$name" > /dev/null
  echo "$name: $run/export"
done

#!/usr/bin/env bash
# Packs kept `edgearmor adapt --keep-work` folders for lab/model/gpu_adapt.py: per kept run, the four training inputs
# (xz) and the run's training arguments, into DIR (default .gpu-adapt, ignored by git; it travels with the device
# call's carry). The base weights are in git already (lab/models/s-no<suite>).
#
#   bash lab/model/gpu-adapt-pack.sh [DIR=.gpu-adapt] KEY=WORK [KEY=WORK ...]    # KEY: slack, slack30, banking...
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=.gpu-adapt
case ${1:-} in *=*) ;; ?*) dir=$1; shift ;; esac
[ $# -gt 0 ] || { echo "usage: gpu-adapt-pack.sh [DIR] KEY=WORK ..." >&2; exit 2; }
mkdir -p "$dir"
for spec in "$@"; do
  suite=${spec%%=*} work=${spec#*=}
  tar cf - -C "$work" traffic-train.jsonl traffic-holdout.jsonl generator-train.jsonl generator-validation.jsonl | xz -9 -T2 > "$dir/$suite.tar.xz"
  /usr/bin/python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["args"], open(sys.argv[2], "w"))' \
    "$work/train-log.json" "$dir/$suite.args.json"
  sha256sum "$work/holdout-cases.jsonl" | cut -d' ' -f1 > "$dir/$suite.holdout-cases.sha256"
done
du -sh "$dir"

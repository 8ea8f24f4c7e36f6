#!/usr/bin/env bash
# Builds what lab/model/gpu-broad.sh trains and scores on, here (the GPU machine has no Node), into DATA
# (default .gpu/, ignored through .git/info/exclude and carried to the device). About 3 minutes and
# 29 MB at the default sizes; N_GEN / N_BROAD / N_EVAL / N_TRACES / SOURCE_LIMIT shrink it for a smoke run.
#
#   bash lab/model/gpu-data.sh                 # then: DATA=.gpu bash lab/model/gpu-broad.sh "name args" ...
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-.gpu}
SHARED=${SHARED:-../shared/datasets}
N_GEN=${N_GEN:-30000}
N_BROAD=${N_BROAD:-60000}
N_EVAL=${N_EVAL:-1500}
N_ASB_PAIRS=${N_ASB_PAIRS:-800}
PY=${PY:-python3}
mkdir -p "$DATA"
traces=$SHARED/agentdojo/train-traces.jsonl
npx tsx src/cli/scenarios.ts --split train --n "$N_GEN" --seed 1 --out "$DATA/train.jsonl"
npx tsx src/cli/scenarios.ts --split validation --n "$(( N_EVAL < 600 ? N_EVAL : 600 ))" --seed 2 --out "$DATA/validation.jsonl"
npx tsx src/cli/scenarios.ts --split test --n "$(( N_EVAL < 1000 ? N_EVAL : 1000 ))" --seed 3 --out "$DATA/test.jsonl"
$PY model/corpus.py --datasets "$SHARED" --out "$DATA" --train "$N_BROAD" --eval "$N_EVAL" ${SOURCE_LIMIT:+--source-limit $SOURCE_LIMIT}
$PY model/agentdojo.py --traces "$traces" --choice-sets "$DATA"
# Scored there, never trained on: AgentDojo dev and a sample of ASB's pairs (both halves of its agents).
$PY - "$SHARED" "$DATA" "$N_ASB_PAIRS" <<'PYEOF'
import json, lzma, sys
sys.path[:0] = ["model", "lab/model"]
from heldout_report import sample_asb_pairs
shared, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cases = [json.loads(l) for l in lzma.open(f"{shared}/asb/cases.jsonl.xz", "rt")]
with lzma.open(f"{data}/asb.jsonl.xz", "wt") as f:
    f.writelines(json.dumps(c) + "\n" for c in sample_asb_pairs(cases, n, seed=7))
PYEOF
xz -T2 -c "$SHARED/agentdojo/dev.jsonl" > "$DATA/dev.jsonl.xz"
# The filler of train.py --pad-results (model/padding.py): the device has no ../shared.
cp "$SHARED/gsm8k/problems.jsonl.xz" "$DATA/gsm8k.jsonl.xz"
head -n "${N_TRACES:-100000}" "$traces" | xz -T2 > "$DATA/traces.jsonl.xz"
for s in train validation test; do xz -T2 -f "$DATA/$s.jsonl"; done
du -sh "$DATA"

"""Per score file: the result's and the user's deltas on ASB, by label, and the ROC-AUC of each reading.

    python3 asb_ds.py SCORES.jsonl ...
"""
import json
import os
import statistics as st
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'model'))
from loo_report import roc_auc  # noqa: E402

# The first 59 pairs of the file's order: as many as the 4,096-token run scored (its file may be a .part, cut short).
CASES = 118

for f in sys.argv[1:]:
    R = [json.loads(l) for l in open(f) if l.strip().endswith('}')][:CASES]
    S = {}
    for lab in ['benign', 'injected']:
        rs = [r for r in R if r['label'] == lab and r['spans']]
        dU = [r['user']['d'] for r in rs]
        dS = [max(v['d'] for v in r['spans'].values()) for r in rs]
        S[lab] = (dU, dS, [a - 2 * b for a, b in zip(dS, dU)], len(rs))
    inj, ben = S['injected'], S['benign']
    print(f.split('/')[-1], 'n %d+%d' % (inj[3], ben[3]), 'median dS inj/ben %.3f/%.3f' % (st.median(inj[1]), st.median(ben[1])),
          'dU inj/ben %.3f/%.3f' % (st.median(inj[0]), st.median(ben[0])),
          '| ROC-AUC dS-2dU %.3f, dS %.3f, -dU %.3f' % (roc_auc(inj[2], ben[2]), roc_auc(inj[1], ben[1]), roc_auc([-x for x in inj[0]], [-x for x in ben[0]])))

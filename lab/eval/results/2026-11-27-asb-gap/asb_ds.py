"""Per score file: the result's and the user's deltas on ASB, by label, and the ROC-AUC of each reading.

    python3 asb_ds.py SCORES.jsonl ...
"""
import json,statistics as st,sys
for f in sys.argv[1:]:
    R=[json.loads(l) for l in open(f) if l.strip().endswith('}')][:118]
    def auc(pos,neg): return sum((p>n)+0.5*(p==n) for p in pos for n in neg)/(len(pos)*len(neg))
    S={}
    for lab in ['benign','injected']:
        rs=[r for r in R if r['label']==lab and r['spans']]
        dU=[r['user']['d'] for r in rs]; dS=[max(v['d'] for v in r['spans'].values()) for r in rs]
        S[lab]=(dU,dS,[a-2*b for a,b in zip(dS,dU)],len(rs))
    print(f.split('/')[-1], 'n %d+%d'%(S['injected'][3],S['benign'][3]), 'median dS inj/ben %.3f/%.3f'%(st.median(S['injected'][1]),st.median(S['benign'][1])), 'dU inj/ben %.3f/%.3f'%(st.median(S['injected'][0]),st.median(S['benign'][0])), '| ROC-AUC dS-2dU %.3f, dS %.3f, -dU %.3f'%(auc(S['injected'][2],S['benign'][2]),auc(S['injected'][1],S['benign'][1]),auc([-x for x in S['injected'][0]],[-x for x in S['benign'][0]])))

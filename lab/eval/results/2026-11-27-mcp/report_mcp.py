"""Per-signal rates, poisoned tool named and flow on an MCP-set run: python3 report_mcp.py RESULTS.json data/heldout/mcp-report.jsonl"""
import json,sys
res,srcp=sys.argv[1],sys.argv[2]
d=json.load(open(res)); src={json.loads(l)['id']:json.loads(l) for l in open(srcp)}
s=json.load(open(res.replace('results.json','summary.json')))
for m,v in s['methods'].items(): print(f"  {m}: TPR {v['tpr']:.3f} FPR {v['fpr']:.3f} AUC {v['roc_auc']:.3f} TPR@5% {v.get('tpr_at_5pct_fpr',0):.3f}")
print('  latency p50/p95', round(s['latency_ms']['p50']), round(s['latency_ms']['p95']))
named=flow=blocked_desc=0; vr_ben=0; only=0; inj_res=0; res_named=0
for c in d['cases']:
    g=c['results']['edgearmor']; sc=src[c['id']]
    dl=(c['results'].get('edgearmor/description-loo') or {}).get('descriptions') or []
    if c['label']=='benign':
        vr_ben+= any((t.get('valueDelta') or -9)>1 and t['delta']>0 for t in dl)
        continue
    if sc.get('poisoned_tool'):
        if g['detected']:
            blocked_desc+=1
            ft=g.get('flaggedTools') or []
            if ft and ft[0]==sc['poisoned_tool']:
                named+=1; flow+= g.get('flow')==sc.get('expected_flow')
    elif g['detected']:
        inj_res+=1; fm=g.get('flaggedMessages') or []
        res_named+= bool(set(fm)&set(sc.get('injected_in') or []))
        only+= bool(fm) and set(fm)<=set(sc.get('injected_in') or []) and not (g.get('flaggedTools'))
print(f"  description attacks blocked {blocked_desc}, poisoned tool named first {named}, flow right {flow}")
print(f"  result attacks blocked {inj_res}, injected result named {res_named}, only it named {only}")
print(f"  benign cases with a value-rule description (delta>0) {vr_ben}")

"""relativeFloor's choice (docs/options.md, "Which parts a verdict names"): for each share, among injected checks with a
flagged part, how often the carrier (injected result or poisoned description) stays named and how often only carriers
are, simulated from a run with the floors off (raw-options.json).

    python3 sweep_relative_floor.py RESULTS.json CASES.jsonl [RESULTS.json CASES.jsonl ...]
"""
import json,sys
for res,srcp in zip(sys.argv[1::2],sys.argv[2::2]):
    d=json.load(open(res)); src={json.loads(l)['id']:json.loads(l) for l in open(srcp)}
    print(res)
    for f in [0,0.05,0.1,0.2,0.3,0.5]:
        n=car=only=ndet=0; nparts=0; bn=0; bparts=0
        for c in d['cases']:
            g=c['results']['edgearmor']; dl=c['results'].get('edgearmor/description-loo',{})
            if g.get('error') or (g.get('reason') and g['reason']!='model'): continue
            parts=[('s',s['messageIndex'],s['delta']) for s in g.get('spans',[]) if s['flagged'] and s['delta']>0]
            parts+=[('t',t['tool'],t['delta']) for t in dl.get('descriptions') or [] if t['delta']>0 and (t['flagged'] or ((t.get('valueDelta') or -9)>1))]
            if not parts: continue
            m=max(p[2] for p in parts); kept=[p for p in parts if p[2]>=f*m]
            sc=src[c['id']]
            if c['label']=='injected':
                carriers={('s',i) for i in sc.get('injected_in') or []}|({('t',sc['poisoned_tool'])} if sc.get('poisoned_tool') else set())
                n+=1; k={(p[0],p[1]) for p in kept}
                car+=bool(k&carriers); only+= (k<=carriers and bool(k)); nparts+=len(kept)
            else:
                bn+=1; bparts+=len(kept)
        print(f"  f {f}: injected with parts {n}: carrier among kept {car/n:.3f}, only carriers {only/n:.3f}, parts/case {nparts/n:.2f}; benign parts/case {bparts/max(bn,1):.2f}")

import json, sys
def load(p):
    return json.load(open(p))['cases']
def simulate(cases, floor):
    res = {'injected': [0, 0], 'benign': [0, 0], 'named': [0, 0], 'flow': [0, 0]}
    for c in cases:
        g = c['results']['edgearmor']; d = c['results'].get('edgearmor/description-loo', {}); m = c['results'].get('edgearmor/mindguard', {})
        if g.get('error'): det = True  # failure policy blocks
        elif g.get('reason') and g['reason'] != 'model': det = g['detected']
        else:
            spans = any(s['flagged'] and s['delta'] > floor for s in g.get('spans', []))
            groups = any(x['flagged'] and x['delta'] > floor for x in g.get('groups', []) or [])
            descs = [t for t in (d.get('descriptions') or []) if t['flagged'] and t['delta'] > floor]
            mg = bool(m.get('detected'))
            det = spans or groups or bool(descs) or mg
            if c['label'] == 'injected' and c.get('poisonedTool') and det and (descs or mg):
                top = max(descs, key=lambda t: t['score'])['tool'] if descs else (m.get('flaggedTools') or [None])[0]
                res['named'][1] += 1; res['named'][0] += top == c['poisonedTool']
        res[c['label']][1] += 1; res[c['label']][0] += det
    return res
for path in sys.argv[1:]:
    cases = load(path)
    print(path, len(cases))
    for f in [-1000, -0.05, 0, 0.01, 0.02, 0.03, 0.05, 0.1]:
        r = simulate(cases, f)
        pct = lambda a: f"{a[0]}/{a[1]}={a[0]/a[1]:.2f}" if a[1] else '-'
        print(f"  floor {f:>7}: injected blocked {pct(r['injected'])}  benign blocked {pct(r['benign'])}  poisoned tool named {pct(r['named'])}")

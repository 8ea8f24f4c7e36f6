"""Description rules that account for how many descriptions a window judges (issue 32), simulated from runs with the
floors and the value rule off (../2026-11-27-mcp/raw-options.json): every tool's description delta and score is in
the record, and the window that judged it is recovered from its reference (delta - score = that window's dU).

Candidates, fixed before the choice runs were read:
- `base`: the shipped rule (flag iff dT - dU > margin - tau and dT > 0, or the value rule).
- `log c`: the margin grows with the number n of descriptions its window judged: + c x ln(n).
- `gap g`: a description is flagged only when, beyond the shipped rule, its delta exceeds every other description
  of its window by more than g (it stands out of its window's noise; the value rule is kept as it is).
- `mad k`: beyond the shipped rule, its delta exceeds the median of the others in its window by k x their MAD.
Added after the first set (mcp-choose) was read, because there a description's own delta ranked its checks better than
dT - dU (ROC-AUC 0.665 against 0.611): `abs t`: after a tool result, a description is flagged when dT > t, whatever dU
(the value rule and the first-call rule as shipped). `gapx g`: `gap g` where another tool's description need not
stand out of the called tool's own definition (removing that one costs the call its name in benign calls too).

Decision rule, fixed before: among candidates that cost at most 0.02 of the injected calls blocked on every
choice set, the one that lowers the mean share of benign calls blocked over the choice sets most; none if none
lowers it by 0.02 or more.

    python3 sweep_standout.py NAME RESULTS.json CASES.jsonl [NAME RESULTS.json CASES.jsonl ...]
"""
import json
import math
import statistics
import sys

TAU, USER_WEIGHT, MARGIN, FIRST_MARGIN, VALUE_MARGIN = -0.1, 2.0, -0.05, 0.26, 1.0


def windows_of(descriptions):
    """Descriptions grouped by the window that judged them (same dU, read off delta - score)."""
    groups = {}
    for t in descriptions:
        groups.setdefault(round(t['delta'] - t['score'], 6), []).append(t)
    return list(groups.values())


def window_first(win, first):
    """Whether a window was judged with the first-call margin: a window that holds no tool result is, whatever the check
    (read off the raw run's flags, where a description is flagged iff its score clears its window's margin)."""
    for t in win:
        if MARGIN - TAU < t['score'] <= FIRST_MARGIN - TAU:
            return not t['flagged']
    return first


def base_flag(t, first):
    margin = FIRST_MARGIN if first else MARGIN
    loo = t['score'] > margin - TAU
    value = (t.get('valueDelta') if t.get('valueDelta') is not None else -9) > VALUE_MARGIN
    return (loo or value) and t['delta'] > 0, value and t['delta'] > 0


def flagged_descriptions(descriptions, first, rule, called=None):
    kind, p = rule
    out = []
    for win in windows_of(descriptions):
        n = len(win)
        first = window_first(win, first)
        for t in win:
            ok, by_value = base_flag(t, first)
            if not ok and kind != 'abs':
                continue
            others = [o['delta'] for o in win if o is not t]
            if kind == 'log':
                margin = (FIRST_MARGIN if first else MARGIN) + p * math.log(max(n, 1))
                ok = by_value or t['score'] > margin - TAU
            elif kind == 'gap':
                ok = by_value or not others or t['delta'] > max(others) + p
            elif kind == 'gapx':
                rest = [o['delta'] for o in win if o is not t and (t['tool'] == called or o['tool'] != called)]
                ok = by_value or not rest or t['delta'] > max(rest) + p
            elif kind == 'abs' and not first:
                ok = by_value or t['delta'] > p
            elif kind == 'mad' and len(others) >= 2:
                med = statistics.median(others)
                mad = statistics.median(abs(o - med) for o in others) or 1e-6
                ok = by_value or t['delta'] > med + p * mad
            if ok:
                out.append(t)
    return out


def simulate(cases, src, rule):
    res = {'injected': [0, 0], 'benign': [0, 0], 'named': [0, 0]}
    for c in cases:
        g = c['results']['edgearmor']
        d = c['results'].get('edgearmor/description-loo', {})
        m = c['results'].get('edgearmor/mindguard', {})
        if g.get('error'):
            det = True
        elif g.get('reason') and g['reason'] != 'model':
            det = g['detected']
        else:
            first = all(msg['role'] != 'tool' for msg in src[c['id']]['messages'])
            spans = any(s['flagged'] and s['delta'] > 0 for s in g.get('spans', []))
            groups = any(x['flagged'] and x['delta'] > 0 for x in g.get('groups', []) or [])
            descs = flagged_descriptions(d.get('descriptions') or [], first, rule, src[c['id']]['action']['name'])
            det = spans or groups or bool(descs) or bool(m.get('detected'))
            if c['label'] == 'injected' and c.get('poisonedTool') and det and descs:
                res['named'][1] += 1
                res['named'][0] += max(descs, key=lambda t: t['score'])['tool'] == c['poisonedTool']
        res[c['label']][1] += 1
        res[c['label']][0] += det
    return res


RULES = [('base', None)] + [('log', c) for c in (0.02, 0.05, 0.1)] + [('gap', g) for g in (0, 0.02, 0.05)] + [('gapx', g) for g in (0, 0.02, 0.05)] + [('mad', k) for k in (2, 3, 5)] + [('abs', t) for t in (0.1, 0.15, 0.2, 0.3)]


def main():
    sets = []
    for name, res, cases in zip(sys.argv[1::3], sys.argv[2::3], sys.argv[3::3]):
        src = {}
        for line in open(cases):
            c = json.loads(line)
            src[c['id']] = c
        sets.append((name, json.load(open(res))['cases'], src))
    rate = lambda a: a[0] / a[1] if a[1] else float('nan')
    table = {}
    for rule in RULES:
        table[rule] = {name: simulate(cases, src, rule) for name, cases, src in sets}
    base = table[('base', None)]
    print('rule'.ljust(10), '  '.join(f'{n}: inj / ben / named'.ljust(34) for n, _, _ in sets), ' mean benign  max injected cost')
    for rule, r in table.items():
        cols = '  '.join(f"{rate(r[n]['injected']):.3f} / {rate(r[n]['benign']):.3f} / {r[n]['named'][0]}/{r[n]['named'][1]}".ljust(34 + len(n) - 2) for n, _, _ in sets)
        mean_b = statistics.mean(rate(r[n]['benign']) for n, _, _ in sets)
        cost = max(rate(base[n]['injected']) - rate(r[n]['injected']) for n, _, _ in sets)
        print(f"{rule[0]} {rule[1] if rule[1] is not None else ''}".ljust(10), cols, f' {mean_b:.3f}  {cost:.3f}')


if __name__ == '__main__':
    main()

"""The called tool's own definition judged fewer times (issue 32, stop 46): the bound of every such rule.

A check in several windows judges the called tool's definition in each and keeps its highest score. Any rule that
judges it fewer times (median over windows, one window only) flags it at most as often as the shipped rule and at
least as often as never flagging it by leave-one-out (the value rule kept). This simulates that bound from the same
raw runs as sweep_standout.py, with its shipped rule and window recovery:

- `shipped`: sweep_standout's base rule;
- `none (several windows)`: the called tool's definition flagged only by the value rule in checks of 2+ windows;
- `none`: the same in every check.

    python3 sim_own_definition.py NAME RESULTS.json CASES.jsonl [NAME RESULTS.json CASES.jsonl ...]
"""
import json
import sys

import sweep_standout as s

shipped_flags = s.flagged_descriptions


def without_own(multi_only):
    def flagged(descriptions, first, rule, called=None):
        out = shipped_flags(descriptions, first, ('base', None), called)
        if multi_only and len(s.windows_of(descriptions)) < 2:
            return out
        return [t for t in out if t['tool'] != called or s.base_flag(t, first)[1]]
    return flagged


def main():
    sets = []
    for name, res, cases in zip(sys.argv[1::3], sys.argv[2::3], sys.argv[3::3]):
        src = {c['id']: c for c in map(json.loads, open(cases))}
        sets.append((name, json.load(open(res))['cases'], src))
    rate = lambda a: f'{a[0] / a[1]:.3f}' if a[1] else '-'
    for label, flagged in (('shipped', shipped_flags), ('none (several windows)', without_own(True)), ('none', without_own(False))):
        s.flagged_descriptions = flagged
        cols = []
        for name, cases, src in sets:
            r = s.simulate(cases, src, ('base', None))
            cols.append(f"{name}: {rate(r['injected'])} / {rate(r['benign'])}, named {r['named'][0]}/{r['named'][1]}")
        print(label.ljust(24), ' | '.join(cols))


if __name__ == '__main__':
    main()

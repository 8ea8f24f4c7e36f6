"""Packs what a GPU call brings back within the device's limits (8 files, 16 MiB each, 64 MiB in all).

One file holds every run's logs, configs, tokenizer and score files (`meta.tar.xz`); the rest hold fp16
weights, one run after another, split into 15 MiB parts (`<run>.fp16.pt.part-00`, ...), for as many runs
as fit. The order is the decision rule's (gpu-trials.md, "the broad recipe"): full-data runs by their mean
ROC-AUC over the choice slices, best first, then the held-out-suite runs, then anything unscored, so a
call cut short still brings back the runs that would ship. Runs that did not fit are named; a second call
on the same machine brings them with `--only`:

    python3 lab/model/gpu_pack.py lab/runs --out "$OUT"              # after gpu-broad.sh
    python3 lab/model/gpu_pack.py lab/runs --out "$OUT" --only m-noslack m-nobanking

Here: `cat <run>.fp16.pt.part-* > lab/runs/gpu-<run>/model-fp16.pt`, `tar xf meta.tar.xz`.
"""
from __future__ import annotations

import argparse
import glob
import io
import json
import os
import tarfile

MAX_FILES, MAX_BYTES, PART = 8, 62 * 2**20, 15 * 2**20
CHOICE_SLICES = ("broad-validation", "tools:broad-validation", "adv-val", "asb-choose")


def choice_mean(row: dict) -> float | None:
    """The decision rule's number: the mean ROC-AUC over the choice slices; None when one is missing."""
    aucs = [(row.get(s) or {}).get("roc_auc") for s in CHOICE_SLICES]
    return None if any(a is None for a in aucs) else sum(aucs) / len(aucs)


def ranked(runs_dir: str) -> list[str]:
    names = sorted(os.path.basename(p)[len("gpu-"):] for p in glob.glob(f"{runs_dir}/gpu-*") if os.path.isdir(p))
    table = {}
    if os.path.exists(f"{runs_dir}/heldout.json"):
        table = json.load(open(f"{runs_dir}/heldout.json"))
    mean = {n: choice_mean(table.get(f"gpu-{n}", {})) for n in names}
    # Full-data runs first (they may ship), best mean first; a held-out-suite run next; unscored last.
    return sorted(names, key=lambda n: ("-no" in n, mean[n] is None, -(mean[n] or 0), n))


def pack(runs_dir: str, out: str, only: list[str] | None) -> list[str]:
    os.makedirs(out, exist_ok=True)
    for old in glob.glob(f"{out}/*.part-*") + glob.glob(f"{out}/meta.tar.xz"):
        os.remove(old)
    # Whatever else the call leaves there (its log, say) counts towards the limits too, and one file and
    # 2 MiB are kept for what it may still write.
    others = [p for p in glob.glob(f"{out}/*") if os.path.isfile(p)]
    files, used = len(others) + 1, sum(os.path.getsize(p) for p in others) + 2 * 2**20
    if not only:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as tar:
            for path in sorted(glob.glob(f"{runs_dir}/gpu-*/*") + glob.glob(f"{runs_dir}/heldout.json")):
                if not path.endswith(".pt"):
                    tar.add(path, arcname=os.path.relpath(path))
        with open(f"{out}/meta.tar.xz", "wb") as f:
            f.write(buf.getvalue())
        files, used = files + 1, used + buf.tell()
    left = []
    for name in only or ranked(runs_dir):
        path = f"{runs_dir}/gpu-{name}/model-fp16.pt"
        if not os.path.exists(path):
            left.append(f"{name} (no weights)")
            continue
        size = os.path.getsize(path)
        parts = -(-size // PART)
        if files + parts > MAX_FILES or used + size > MAX_BYTES:
            left.append(name)
            continue
        with open(path, "rb") as f:
            for i in range(parts):
                with open(f"{out}/{name}.fp16.pt.part-{i:02d}", "wb") as p:
                    p.write(f.read(PART))
        files, used = files + parts, used + size
        print(f"packed {name}: {size / 2**20:.1f} MiB in {parts} part(s)", flush=True)
    return left


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs_dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="these runs' weights alone (a second call)")
    args = ap.parse_args()
    left = pack(args.runs_dir, args.out, args.only)
    print("order: " + " ".join(args.only or ranked(args.runs_dir)))
    if left:
        print("left on the device: " + " ".join(left))


if __name__ == "__main__":
    main()

"""Replays adapt's training step (model/adapt.py) of kept cross-suite runs on one GPU, for as many steps as a
CPU would need hours for: what more training buys when screening and planting stay as they were.

    python3 lab/model/gpu_adapt.py --pack DIR --out OUT [--minutes 5.5] "NAME KEY STEPS [adapt.py flags]" ...

DIR holds KEY.tar.xz per kept run: the four inputs of a kept adapt work folder (traffic-train.jsonl,
traffic-holdout.jsonl, generator-train.jsonl, generator-validation.jsonl, packed by lab/model/gpu-adapt-pack.sh)
and KEY.args.json (that run's train-log args). KEY starts with the suite (slack, slack30, banking, movies30); the base
is lab/models/s-noSUITE (fp16 weights kept in git) or, where there is none, the embedded model. Every run goes in its own process: model/adapt.py's main with
that run's arguments, `--device cuda`, a schedule of STEPS steps (the cosine decays over them; - for adapt.py's
own GPU schedule and its stop on convergence), --minutes as a wall cap, and the spec's own flags last (e.g. --lr 2e-3). The ONNX export and
quantization are left to the CPU machine (torch 1.13, the exporter the shipped models come from): each run
writes OUT/NAME.fp16.pt (the weights adapt kept) and OUT/NAME.train-log.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "model"))


def one(pack: str, out: str, name: str, key: str, steps: str, minutes: float, device: str, extra: list[str]) -> int:
    import torch

    import adapt
    import export_onnx
    import import_onnx
    import quantize

    work = os.path.join("/tmp/gpu-adapt", name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    suite = re.match(r"[a-z]+", key).group()
    with tarfile.open(os.path.join(pack, f"{key}.tar.xz")) as t:
        t.extractall(work)
    kept = os.path.join(ROOT, "lab", "models", f"s-no{suite}")
    if not os.path.isdir(kept):  # a run on the embedded model (SGD Movies): its ONNX, imported as adapt does
        base = os.path.join(ROOT, "public", "models", "edgearmor-proxy")
    else:
        base = os.path.join(work, "base")  # what adapt.py checks a base directory for; import_model below reads `kept`
        os.makedirs(os.path.join(base, "onnx"))
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(kept, f), os.path.join(base, f))
        open(os.path.join(base, "onnx", "model.onnx"), "wb").close()

        def import_model(model_dir: str, run: str) -> int:  # the kept fp16 weights, upcast by load(): no ONNX import
            os.makedirs(run, exist_ok=True)
            for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(kept, f), os.path.join(run, f))
            shutil.copy(os.path.join(kept, "model-fp16.pt"), os.path.join(run, "model.pt"))
            return len(torch.load(os.path.join(run, "model.pt"), map_location="cpu"))

        import_onnx.import_model = import_model

    def export(model, path: str, **_) -> None:
        torch.save({k: v.half() for k, v in model.state_dict().items()}, os.path.join(out, f"{name}.fp16.pt"))
        open(path, "wb").close()

    def quantize_model(src: str, dst: str) -> dict:
        open(dst, "wb").close()
        return {"max_err_over_half_step": 0.0}

    export_onnx.export = export
    quantize.quantize_model = quantize_model
    with open(os.path.join(pack, f"{key}.args.json")) as f:
        a = json.load(f)
    rc = adapt.main([
        "--work", work, "--base", base, "--device", device, *(["--steps", steps] if steps != "-" else []),
        "--train-minutes", str(minutes), "--seed", str(a["seed"]), "--threads", "2", "--families", a["families"],
        "--generator-share", str(a["generator_share"]), "--holdout-cases", str(a["holdout_cases"]),
        "--max-len", str(a["max_len"]), "--batch-tokens", str(a["batch_tokens"]), "--lr", str(a["lr"]), *extra,
    ])
    if os.path.exists(os.path.join(work, "holdout-cases.jsonl")):  # planting must match the CPU run's
        with open(os.path.join(out, f"{name}.holdout-cases.sha256"), "w") as f:
            f.write(hashlib.sha256(open(os.path.join(work, "holdout-cases.jsonl"), "rb").read()).hexdigest() + "\n")
    if os.path.exists(os.path.join(work, "train-log.json")):
        shutil.copy(os.path.join(work, "train-log.json"), os.path.join(out, f"{name}.train-log.json"))
    return rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=5.5)
    ap.add_argument("--device", default="cuda", help="cuda; cpu for a smoke test of this script")
    ap.add_argument("--one", action="store_true", help="run one spec in this process")
    ap.add_argument("specs", nargs="+", help='"NAME SUITE STEPS"')
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.one:
        name, key, steps, *extra = args.specs[0].split()
        return one(args.pack, args.out, name, key, steps, args.minutes, args.device, extra)
    procs = []
    for spec in args.specs:
        name = spec.split()[0]
        log = open(os.path.join(args.out, f"{name}.log"), "w")
        procs.append((name, subprocess.Popen([sys.executable, __file__, "--one", "--pack", args.pack, "--out", args.out,
                                              "--minutes", str(args.minutes), "--device", args.device, spec], stdout=log, stderr=subprocess.STDOUT)))
    failed = 0
    for name, p in procs:
        rc = p.wait()
        print(f"{name}: exit {rc}", flush=True)
        failed += rc != 0
    # Logs and training logs in one file: what comes back from the device is a few files.
    with tarfile.open(os.path.join(args.out, "logs.tar.xz"), "w:xz") as t:
        for f in sorted(os.listdir(args.out)):
            if f.endswith((".log", ".train-log.json", ".sha256")):
                t.add(os.path.join(args.out, f), arcname=f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

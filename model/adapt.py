"""The Python half of `edgearmor adapt`: fine-tunes a proxy on a user's own attack-free agent traffic, on the CPU or
a CUDA GPU (--device cuda).

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 model/adapt.py \\
        --work WORK --base DIR --train-minutes M [--seed 1] [--threads 2] [--families train|all] ...

Reads WORK/traffic-train.jsonl and WORK/traffic-holdout.jsonl ({id, messages, tools} conversations, screened by
the base guard; one marked `unscreened: true` is a source of recurring values only, never trained on, unless its
screened copy arrives in --screened-dir while training runs), WORK/generator-train.jsonl and
WORK/generator-validation.jsonl (the package generator's cases), and the model directory DIR (config.json, tokenizer, onnx/model.onnx). Writes WORK/holdout-cases.jsonl (real
calls and attacks planted at the held-out conversations' calls, for the TypeScript side to score and
calibrate on), WORK/candidate/ (config, tokenizer, onnx/model.onnx, onnx/model_q4.onnx, manifest.json) and
WORK/train-log.json. stdout carries one JSON event a line (stage, progress, eval); stderr is for people.
Exit 2 on bad input. SIGINT stops training at once; the best weights so far are still exported.

Training data (lab/model/gpu-trials.md has the CPU fine-tunes this follows): every traffic-train conversation
whole (language modelling), attacks planted at its calls (plant.py) with every attack counterfactual and a
third of the request counterfactuals (at 1.0 they pushed dU up on every real call), every traffic-derived
sequence's copied values scrambled (nothing the user or an attacker types may be memorised), and generator
cases as `--generator-share` of the sequences so the proxy keeps what it knew (model/adapt_data.py). The step kept is the one with
the lowest loss on the held-out traffic's real calls and followed attacks (with their counterfactuals).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from adapt_data import (BadInput, PassOrder, ScreenedStream, TrainingData, check_conversations,  # noqa: E402
                        load_jsonl, trained_conversations, write_holdout_cases)

WARMUP_STEPS = 20
# A GPU's schedule: this many passes over the training data, between where the held-out traffic's loss bottomed out
# on the cross-suite protocol's suites (docs/adapt.md, "More training than the CPU gives"); later steps only overfit
# the traffic. On the CPU, where a pass takes about an hour, the schedule is the time budget.
GPU_EPOCHS = 3.0
PROGRESS_EVERY_S = 10.0
# How often training looks for newly screened conversations (--screened-dir).
STREAM_POLL_S = 5.0
# What the export (fp32 ONNX, q4, manifest) is given at the end of --wall-minutes: a multiple of the time importing
# the base took (the same graph read the other way, plus quantizing), and at least a floor.
EXPORT_RESERVE_IMPORTS = 6.0
EXPORT_RESERVE_FLOOR_S = 8.0


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="folder with the inputs; the outputs go there too")
    ap.add_argument("--base", help="model directory to start from (config.json, tokenizer, onnx/model.onnx); not read with --plant-only")
    ap.add_argument("--train-minutes", type=float, help="wall-time budget of training, evaluations included; not read with --plant-only")
    ap.add_argument("--wall-minutes", type=float,
                    help="wall time of the whole run from its start (import, data, evaluations, training, export): training "
                         "stops early enough for the final evaluation and the export to fit; none when absent")
    ap.add_argument("--seed", type=int, default=1, help="data, planting and batch order")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--families", default="all", choices=["train", "all"],
                    help="attack phrasing families planted: train holds corpus.py's validation and test families out")
    ap.add_argument("--generator-share", type=float, default=0.3, help="share of the training sequences from the generator")
    ap.add_argument("--holdout-cases", type=int, default=240)
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--eval-every-minutes", type=float,
                    help="minutes between evaluations on the held-out traffic (default 2 on the CPU, 0.25 on a GPU, "
                         "where a minute is hundreds of steps)")
    ap.add_argument("--patience", type=int, default=8,
                    help="stop training after this many evaluations in a row without a better held-out loss (0: never)")
    ap.add_argument("--steps", type=int,
                    help="the learning-rate schedule's length in steps (default: on the CPU none, the schedule follows "
                         f"the time budget; on a GPU {GPU_EPOCHS:g} passes over the training data)")
    ap.add_argument("--device", default="cpu",
                    help="where training runs: cpu, or cuda (torch 2 with a GPU; bfloat16 autocast, fp32 master weights)")
    ap.add_argument("--screened-dir",
                    help="the training conversations marked unscreened arrive here, screened, while training runs (files "
                         "NNNNNN.jsonl, each renamed into place whole, then a file `done`); CPU only")
    ap.add_argument("--plant-only", action="store_true",
                    help="write holdout-cases.jsonl and stop (the same cases the training run writes for the same inputs); "
                         "needs only the standard library (edgearmor calibrate runs it without torch)")
    args = ap.parse_args(argv)
    if not args.plant_only and (args.base is None or args.train_minutes is None):
        ap.error("--base and --train-minutes are required unless --plant-only")
    return args


def read_inputs(args) -> dict:
    """The input files, checked; raises BadInput with what is wrong. Planting reads no model."""
    if not args.plant_only:
        if not os.path.isfile(os.path.join(args.base, "onnx", "model.onnx")):
            raise BadInput(f'base model "{args.base}" has no onnx/model.onnx (a model directory from edgearmor or model/export_onnx.py)')
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            if not os.path.isfile(os.path.join(args.base, f)):
                raise BadInput(f'base model "{args.base}" has no {f}')
    if not 0 <= args.generator_share < 1:
        raise BadInput(f"--generator-share {args.generator_share}: should be at least 0 and below 1")
    out = {}
    names = {"train": "traffic-train.jsonl", "holdout": "traffic-holdout.jsonl",
             "gen_train": "generator-train.jsonl", "gen_val": "generator-validation.jsonl"}
    for key, name in names.items():
        path = os.path.join(args.work, name)
        if not os.path.isfile(path):
            if key == "gen_train" and (args.generator_share == 0 or args.plant_only) or key == "gen_val":
                out[key] = []
                continue
            raise BadInput(f"missing input {path}")
        try:
            out[key] = load_jsonl(path)
        except ValueError as e:
            raise BadInput(f"{path} is not JSON Lines: {e}") from None
    for key in ("train", "holdout"):
        check_conversations(out[key], names[key])
    if args.screened_dir is not None and not args.plant_only:
        if not os.path.isdir(args.screened_dir):
            raise BadInput(f"--screened-dir {args.screened_dir} is not a folder")
        if args.device != "cpu":
            raise BadInput(f"--screened-dir trains while screening goes on, on the CPU; --device {args.device} sizes its schedule to the whole data, so screen first")
    elif not trained_conversations(out) and not args.plant_only:
        raise BadInput(f"{os.path.join(args.work, names['train'])} has no conversations to train on (every one is unscreened)")
    if args.generator_share > 0 and not out["gen_train"] and not args.plant_only:
        raise BadInput(f"{os.path.join(args.work, names['gen_train'])} has no cases (or pass --generator-share 0)")
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    t0 = time.time()
    since = lambda: round(time.time() - t0, 2)
    try:
        inputs = read_inputs(args)
    except BadInput as e:
        say(f"edgearmor adapt: {e}")
        return 2

    if args.plant_only:
        # The held-out cases alone, for the base guard to score before training (it sets the screening point).
        write_holdout_cases(args, inputs)
        emit("stage", stage="done", seconds=since())
        return 0

    interrupted = False

    def on_sigint(signum, frame):
        nonlocal interrupted
        if interrupted:  # a second ^C: stop now, without the export
            raise KeyboardInterrupt
        interrupted = True
        say("interrupted: stopping training; the best weights so far are still exported")

    signal.signal(signal.SIGINT, on_sigint)

    import warnings

    import torch
    # torch 1.13's exporter warns about prim::Constant shape inference on every export; the graph is checked.
    warnings.filterwarnings("ignore", message="The shape inference of prim::Constant")

    import bpe
    import manifest
    from export_onnx import export, load
    from import_onnx import import_model
    from quantize import quantize_model
    from train import batches, cosine_lr, evaluate, make_optimizer, train_step

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = args.device
    if device != "cpu" and not (device.startswith("cuda") and torch.cuda.is_available()):
        say(f'edgearmor adapt: --device {device}: torch {torch.__version__} has no such device here (cpu, or cuda where torch sees a GPU)')
        return 2

    emit("stage", stage="import", seconds=since())
    base_run = os.path.join(args.work, "base-run")
    t_import = time.time()
    try:
        n_tensors = import_model(args.base, base_run)
    except Exception as e:  # a config or an onnx file that does not describe a proxy
        say(f"edgearmor adapt: cannot import {args.base}: {e}")
        return 2
    import_seconds = time.time() - t_import
    export_reserve = max(EXPORT_RESERVE_FLOOR_S, EXPORT_RESERVE_IMPORTS * import_seconds)
    say(f"imported {n_tensors} tensors from {args.base} in {import_seconds:.1f}s")
    tok = bpe.Tokenizer.load(os.path.join(base_run, "tokenizer.json"))

    emit("stage", stage="data", seconds=since())
    t_data = time.time()
    data = TrainingData(args, inputs, tok)
    stream = ScreenedStream(args.screened_dir) if args.screened_dir is not None else None
    data_seconds = time.time() - t_data
    say(f"data in {data_seconds:.1f}s: {json.dumps(data.counts(len(inputs['holdout'])))}")

    emit("stage", stage="train", seconds=since())
    # bfloat16 autocast on a GPU, as lab/model/gpu-train.sh trains; the weights and the optimiser stay fp32.
    amp = torch.bfloat16 if device != "cpu" else None
    eval_every = args.eval_every_minutes if args.eval_every_minutes is not None else (2.0 if device == "cpu" else 0.25)
    model = load(base_run).to(device).train()
    model.fused_attention = device != "cpu" and hasattr(torch.nn.functional, "scaled_dot_product_attention")
    cfg = model.cfg
    opt = make_optimizer(model, args.lr)
    budget = args.train_minutes
    log = {"args": vars(args), "data_seconds": data_seconds, "evals": [], "progress": [], "stream": []}
    best = None
    step, tokens_seen = 0, 0
    eval_seconds = [0.0]
    t_train = time.time()
    minutes = lambda: (time.time() - t_train) / 60

    since_best = 0  # evaluations since the best one

    def validate():
        nonlocal best, since_best
        t = time.time()
        rec = {"step": step, "minutes": round(minutes(), 3)}
        if data.val_traffic:
            rec["traffic_loss"], rec["traffic_action_loss"] = evaluate(model, data.val_traffic, cfg.pad_token_id, args.batch_tokens, device, amp)
        if data.val_gen:
            rec["generator_loss"], rec["generator_action_loss"] = evaluate(model, data.val_gen, cfg.pad_token_id, args.batch_tokens, device, amp)
        rec["seconds"] = round(time.time() - t, 2)
        eval_seconds[0] += time.time() - t
        # Chosen on the held-out traffic; the generator's loss only when the holdout has no calls.
        key = rec.get("traffic_loss", rec.get("generator_loss"))
        log["evals"].append(rec)
        emit("eval", **rec)
        if key is not None and (best is None or key < best[0]):
            best = (key, step, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
            since_best = 0
        else:
            since_best += 1

    validate()
    base_eval = log["evals"][0]
    # Training's budget: --train-minutes, and within --wall-minutes what is left after one more evaluation (the
    # final one, as long as the base's) and the export.
    one_eval = base_eval["seconds"]
    if args.wall_minutes is not None:
        left = args.wall_minutes * 60 - (time.time() - t0) - one_eval - export_reserve
        budget = max(0.0, min(budget, left / 60))
    log["budget"] = {"train_minutes": budget, "eval_seconds": one_eval, "export_reserve_seconds": export_reserve,
                     "wall_minutes": args.wall_minutes, "before_training_seconds": round(time.time() - t0, 2)}
    t_train = time.time()
    eval_seconds[0] = 0.0
    rng = random.Random(f"{args.seed}:adapt-batches")
    last_progress = last_eval = time.time()
    loss_value = None
    # Converged: the held-out loss has not improved for --patience evaluations (a GPU gets there in minutes;
    # what is left of the budget would only be spent overfitting the training traffic).
    stale = lambda: args.patience > 0 and since_best >= args.patience
    if args.steps is not None:
        steps = args.steps
    elif device == "cpu":
        steps = 100000  # never reached: the time budget ends the schedule
    else:
        steps = max(WARMUP_STEPS + 1, round(GPU_EPOCHS * len(batches(data.train, args.batch_tokens, random.Random(0)))))
    log["budget"]["schedule_steps"] = steps
    stop = lambda: interrupted or step >= steps or minutes() >= budget or stale()
    # Screening still handing conversations over (--screened-dir): training takes them as they come.
    waiting = lambda: stream is not None and not stream.done

    def take_stream() -> bool:
        """Encodes what screening handed over since the last look; whether anything came."""
        arrived = stream.poll()
        for rows in arrived:
            data.add(rows)
            log["stream"].append({"step": step, "minutes": round(minutes(), 3), "conversations": len(rows), "train_sequences": len(data.train)})
        return bool(arrived)

    order = PassOrder()
    while not stop() and (data.train or waiting()):
        if waiting() and not take_stream() and not data.train:
            time.sleep(STREAM_POLL_S / 5)  # nothing to train on yet
            continue
        # What this pass has still to train; newly screened conversations join it (take_stream, below).
        train_ex, keys = order.pending(data)
        last_poll = time.time()
        for idx in batches(train_ex, args.batch_tokens, rng):
            if stop():
                break
            if waiting() and time.time() - last_poll >= STREAM_POLL_S:
                last_poll = time.time()
                if take_stream():
                    break
            for g in opt.param_groups:
                g["lr"] = cosine_lr(args.lr, step, WARMUP_STEPS, steps, minutes() / budget if step > 0 else 0.0)
            loss, n = train_step(model, opt, train_ex, idx, cfg.pad_token_id, device, amp)
            order.trained(keys[i] for i in idx)
            loss_value = loss.item()
            tokens_seen += n
            step += 1
            if time.time() - last_progress >= PROGRESS_EVERY_S or step == 1:
                last_progress = time.time()
                rec = {"step": step, "minutes": round(minutes(), 3), "budgetMinutes": budget, "loss": round(loss_value, 4),
                       "tokensPerSecond": round(tokens_seen / max(time.time() - t_train, 1e-9))}
                log["progress"].append(rec)
                emit("progress", **rec)
            # An evaluation that would run past the budget is left to the final one.
            if time.time() - last_eval >= eval_every * 60 and not interrupted and minutes() + one_eval / 60 < budget:
                validate()
                last_eval = time.time()
    train_minutes = minutes()
    if stream is not None and not data.train:
        say(f"edgearmor adapt: screening handed over no conversation to train on ({args.screened_dir})")
        return 2
    log["counts"] = data.counts(len(inputs["holdout"]))
    stopped = "interrupted" if interrupted else "converged" if stale() else "schedule" if step >= steps else "budget"
    if step > 0 and not interrupted and log["evals"][-1]["step"] != step:
        validate()
    model = model.to("cpu")
    model.fused_attention = False
    if best is not None:
        model.load_state_dict(best[2])
    best_eval = next((e for e in log["evals"] if best is not None and e["step"] == best[1]), base_eval)
    say(f"trained {step} steps, {tokens_seen} tokens in {train_minutes:.2f} min on {device} ({stopped}); best step {best_eval['step']}")

    emit("stage", stage="export", seconds=since())
    t_export = time.time()
    model.eval()
    cand = os.path.join(args.work, "candidate")
    shutil.rmtree(cand, ignore_errors=True)
    os.makedirs(os.path.join(cand, "onnx"))
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.base, f), os.path.join(cand, f))
    export(model, os.path.join(cand, "onnx", "model.onnx"))
    export_seconds = time.time() - t_export

    emit("stage", stage="quantize", seconds=since())
    t_q = time.time()
    q = quantize_model(os.path.join(cand, "onnx", "model.onnx"), os.path.join(cand, "onnx", "model_q4.onnx"))
    if q["max_err_over_half_step"] > 1.0 + 1e-4:
        say("edgearmor adapt: 4-bit dequantization error exceeds half a quantization step")
        return 1
    base_name = os.path.basename(os.path.normpath(args.base))
    try:
        with open(os.path.join(args.base, "manifest.json")) as f:
            base_name = json.load(f).get("model") or base_name
    except (OSError, ValueError):
        pass
    with open(os.path.join(cand, "manifest.json"), "w") as f:
        json.dump(manifest.build(cand, f"{base_name}-adapted"), f, indent=2)
        f.write("\n")
    quantize_seconds = time.time() - t_q

    try:
        import resource  # not on Windows
        # kB on Linux: the most memory training held (the allocator keeps what it freed: src/adapt/python.ts).
        log["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    except ImportError:
        pass
    log.update(steps_done=step, tokens_seen=tokens_seen, train_minutes=train_minutes, interrupted=interrupted, stopped=stopped,
               tokens_per_second=tokens_seen / max(train_minutes * 60 - eval_seconds[0], 1e-9), best_step=best_eval["step"],
               base=base_eval, best=best_eval, export_seconds=export_seconds, quantize_seconds=quantize_seconds,
               total_seconds=time.time() - t0)
    with open(os.path.join(args.work, "train-log.json"), "w") as f:
        json.dump(log, f, indent=1)
    shutil.rmtree(base_run, ignore_errors=True)
    emit("stage", stage="done", seconds=since(), steps=step, bestStep=best_eval["step"], interrupted=interrupted, stopped=stopped,
         base={k: base_eval.get(k) for k in ("traffic_loss", "generator_loss")},
         best={k: best_eval.get(k) for k in ("traffic_loss", "generator_loss")})
    return 0


if __name__ == "__main__":
    sys.exit(main())

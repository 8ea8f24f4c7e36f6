"""One AgentDojo suite's files for the cross-suite protocol, read in place from ../shared/datasets/agentdojo:
its dev cases (never trained, adapted or calibrated on) and, for adapt, its attack-free training runs as the
agent's own traffic. The files written are derived from the datasets: keep them out of git.

    python3 lab/eval/agentdojo_suite.py SUITE [--dev OUT.jsonl] [--traffic OUT.jsonl]
"""
import argparse
import json

SRC = "../shared/datasets/agentdojo"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--dev", help="SUITE's dev cases, as dev.jsonl has them")
    ap.add_argument("--traffic", help="every training run of SUITE with no attack: messages and tools")
    args = ap.parse_args()
    if args.traffic:
        with open(args.traffic, "w") as f:
            for line in open(f"{SRC}/train-traces.jsonl"):
                t = json.loads(line)
                if t["suite"] == args.suite and t["attack"] == "none":
                    f.write(json.dumps({"messages": t["messages"], "tools": t["tools"]}) + "\n")
    if args.dev:
        with open(args.dev, "w") as f:
            for line in open(f"{SRC}/dev.jsonl"):
                if json.loads(line)["suite"] == args.suite:
                    f.write(line)


if __name__ == "__main__":
    main()

"""Write manifest.json for a model dir: SHA-256 and size of every file in it (README.md included).

  { "files": { "<path relative to the model dir, '/'-separated>": { "sha256": "<hex>", "size": <bytes> } },
    "model": "<name>", "created_by": "model/manifest.py" }

manifest.json itself is not listed. Files are listed in sorted order so reruns are byte-identical.
Usage: python3 model/manifest.py <model dir> [--name NAME]   (NAME defaults to the dir's basename)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os


def build(model_dir: str, name: str | None = None) -> dict:
    files = {}
    for root, dirs, names in os.walk(model_dir):
        dirs.sort()
        for fn in sorted(names):
            full = os.path.join(root, fn)
            rel = os.path.relpath(full, model_dir).replace(os.sep, "/")
            if rel == "manifest.json" or not os.path.isfile(full):
                continue
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            files[rel] = {"sha256": h.hexdigest(), "size": os.path.getsize(full)}
    return {"files": dict(sorted(files.items())),
            "model": name or os.path.basename(os.path.normpath(model_dir)),
            "created_by": "model/manifest.py"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir", nargs="?", default="public/models/edgearmor-proxy")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    m = build(args.model_dir, args.name)
    with open(os.path.join(args.model_dir, "manifest.json"), "w") as f:
        json.dump(m, f, indent=2)
        f.write("\n")
    total = sum(v["size"] for v in m["files"].values())
    print(f"{args.model_dir}/manifest.json: {len(m['files'])} files, {total} bytes")


if __name__ == "__main__":
    main()

"""Shrink a Node binary's embedded ICU data in place, for lab/bench/gpu/pack.sh's size limit.

Official Node builds embed full ICU (~33 MB of the ~86 MB stripped binary, ~7.5 MB of its ~20 MB xz).
The benchmark needs none of the locale data: this rewrites the embedded ICU common data's table of contents to
keep only the root / English locales and the locale-independent items (normalization, properties, time zones,
break rules, plural rules), and zeroes the rest, which xz then stores almost for free. The binary's layout does not
change. Dropped: other locales' bundles in every tree, collation tailorings, dictionary word-break data
(CJK, Thai, ...), legacy charset converters and transliterators. ICU falls back to root for a missing locale;
Node prints nothing. Checked by lab/bench/gpu/pack.sh (Intl and Unicode regex smoke test) and by the bench itself.

Usage: python3 lab/bench/gpu/slim_node_icu.py NODE_BINARY
"""
from __future__ import annotations

import re
import struct
import sys

KEEP_LOCALES = {"root", "en", "en_US", "en_US_POSIX", "en_001"}
# Non-locale .res items whose names look like locale ids.
KEEP_NAMES = {"res_index", "pool"}
LOCALE = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]+)*")


def keep(item: str) -> bool:
    parts = item.split("/")[1:]  # drop the icudtNNl package prefix
    tree, name = parts[:-1], parts[-1]
    if name.endswith((".dict", ".cnv")) or tree == ["translit"]:
        return False
    if name.endswith(".res"):
        base = name[: -len(".res")]
        if LOCALE.fullmatch(base) and base not in KEEP_NAMES:
            return base in KEEP_LOCALES
    return True


def main() -> None:
    path = sys.argv[1]
    data = bytearray(open(path, "rb").read())
    starts = [m.start() - 12 for m in re.finditer(b"CmnD", data) if data[m.start() - 10 : m.start() - 8] == b"\xda\x27"]
    if len(starts) != 1:
        sys.exit(f"{path}: expected one embedded ICU common data block, found {len(starts)}")
    start = starts[0]
    header = struct.unpack_from("<H", data, start)[0]
    toc = start + header
    count = struct.unpack_from("<I", data, toc)[0]
    entries = [struct.unpack_from("<II", data, toc + 4 + 8 * i) for i in range(count)]
    names = [bytes(data[toc + n : data.index(b"\0", toc + n)]).decode() for n, _ in entries]
    if [d for _, d in entries] != sorted(d for _, d in entries):
        sys.exit(f"{path}: ICU items are not stored in name order; refusing to guess their extents")
    kept = [i for i, name in enumerate(names) if keep(name) or i == count - 1]  # the last item's end is unknown: keep it
    for i in range(count - 1):
        if i not in set(kept):
            a, b = toc + entries[i][1], toc + entries[i + 1][1]
            data[a:b] = bytes(b - a)
    struct.pack_into("<I", data, toc, len(kept))
    for k, i in enumerate(kept):
        struct.pack_into("<II", data, toc + 4 + 8 * k, *entries[i])
    data[toc + 4 + 8 * len(kept) : toc + 4 + 8 * count] = bytes(8 * (count - len(kept)))
    dropped = sum(entries[i + 1][1] - entries[i][1] for i in range(count - 1) if i not in set(kept))
    open(path, "wb").write(data)
    print(f"{path}: ICU items kept {len(kept)} of {count}, {dropped / 2**20:.1f} MiB zeroed")


if __name__ == "__main__":
    main()

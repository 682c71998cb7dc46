#!/usr/bin/env python3
"""Seeds of the ``scenario`` fuzz target: every shipped scenario as TOML and as JSON, and the
TOML examples of docs/, into ``fuzz/corpus/scenario/``, and the libFuzzer dictionary ``fuzz/scenario.dict`` (the field names,
table headers and quoted string values of docs/scenario.md). Needs the xlayer package (for its
TOML reader). Run from the repository: ``python fuzz/make_seeds.py``."""
from __future__ import annotations

import json
import pathlib
import re
import shutil

from xlayer.scenario import load_toml

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    corpus = ROOT / "fuzz" / "corpus" / "scenario"
    corpus.mkdir(parents=True, exist_ok=True)
    for p in sorted((ROOT / "scenarios").glob("*.toml")):
        shutil.copy(p, corpus / p.name)
        (corpus / f"{p.stem}.json").write_text(json.dumps(load_toml(p.read_text())))
    # The TOML examples of the docs reach sections no shipped scenario has.
    for doc in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S)
        for i, block in enumerate(blocks):
            (corpus / f"doc-{doc.stem}-{i}.toml").write_text(block)
    doc = (ROOT / "docs" / "scenario.md").read_text()
    names = sorted(set(re.findall(r"^\| `([a-z_0-9]+)` \|", doc, re.M)))
    tables = sorted(set(re.findall(r"`(\[\[?[a-z_.]+\]\]?)`", doc)))
    strings = sorted(set(re.findall(r'`"([A-Za-z0-9_.\-+]+)"`', doc)))
    lines = ["# libFuzzer dictionary of the scenario target: field names, table headers and string",
             "# values of docs/scenario.md, and a few tokens (made by fuzz/make_seeds.py)."]
    lines += [f'"{n}"' for n in names] + [f'"{t}"' for t in tables]
    lines += ['"\\"%s\\""' % s for s in strings]
    lines += [f'"{t}"' for t in ("=", "[[", "]]", "true", "false", "{", "}", ":", ",", "nan", "inf",
                                  "1e308", "-1", "0", "4294967296", "18446744073709551616")]
    (ROOT / "fuzz" / "scenario.dict").write_text("\n".join(lines) + "\n")
    print(f"{len(list(corpus.iterdir()))} seeds, {len(lines) - 2} dictionary entries")


if __name__ == "__main__":
    main()

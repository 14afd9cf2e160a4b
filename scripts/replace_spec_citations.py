"""Rewrite every citation of the old design notes ("SPEC §…") as a clause id or a docs link.

    python scripts/replace_spec_citations.py          # rewrite in place, list what changed
    python scripts/reference_pages.py --write         # then: pages made from docstrings
    python scripts/replace_spec_citations.py --check  # exit 1 if any citation is left

Mechanical and idempotent, so it can run again after merges. Two passes:

1. PHRASES: whole phrases whose sentence needs rewording, not just a new reference;
2. a citation ``SPEC §a.b[ clause(s) N[, N][ and N]][ step N][ "Name"]`` followed by
   more ``§…`` references joined by ``,``, ``and``, ``-`` or an en dash: each reference becomes
   its target in SECTIONS / CREATE_CLAUSES, duplicates dropped, joined by ", ".

In Markdown under docs/ a clause becomes a link, ``[C-LOST-1](contract.md#c-lost-1)``; in
the README ``docs/contract.md#c-lost-1``; elsewhere the bare id (``C-LOST-1``), which the
page lists. A page target is written as its path (``docs/explanation/engine.md``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCOPE = ("dw_testing", "reference_engine", "conformance", "tests", "benchmarks", "docs",
         "README.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".json"}

# Clauses of the old §2.1 list -> contract clause ids.
CREATE_CLAUSES = {
    "1": "C-CREATE-3", "2": "C-CREATE-1", "3": "C-CREATE-1", "4": "C-CREATE-2",
    "5": "C-CREATE-4", "6": "C-CREATE-5", "7": "C-LOST-1", "8": "C-CREATE-6",
}
# Old section -> what replaces it: a clause id, or a page (a path under the repo root).
SECTIONS = {
    "1": "README.md",
    "2": "docs/contract.md",
    "2.1": "docs/contract.md#the-create",
    "2.2": "docs/contract.md",
    "2.3": "docs/how-to/s3-gcs-emulators.md",
    "3": "docs/explanation/engine.md",
    "4": "docs/explanation/engine.md",
    "4.1": "docs/explanation/engine.md",
    "4.2": "docs/explanation/engine.md",
    "4.3": "docs/explanation/engine.md",
    "4.4": "docs/explanation/engine.md",
    "4.5": "docs/explanation/answers.md",
    "4.6": "docs/explanation/answers.md",
    "4.7": "docs/explanation/answers.md",
    "4.8": "docs/explanation/answers.md",
    "4.9": "C-CAP-2",
    "4.10": "docs/reference/cli.md",
    "5": "docs/reference/cli.md",
    "6": "docs/index.md",
    "6.0": "docs/how-to/test-your-store.md",
    "6.1": "docs/reference/plugin.md",
    "6.2": "C-CAP-1",
    "6.3": "docs/reference/kit.md",
    "6.4": "docs/reference/kit.md",
    "6.5": "docs/reference/kit.md",
    "6.6": "docs/unkillable.md",
    "7": "docs/how-to/s3-gcs-emulators.md",
    "8": "docs/explanation/profiles.md",
    "9": "README.md",
}

# Pass 1: phrases reworded as a whole (old text -> new text; {contract} is the page link).
PHRASES = {
    # The False-to-the-winner settlement (C-CREATE-3): a store must not; an engine tolerates it.
    "passes it (SPEC §2.1 clause 7) while failing": "passes it (C-ENGINE-1) while failing",
    "engine must tolerate (SPEC §2.1 clause 7)": "engine must tolerate (C-ENGINE-1)",
    "(SPEC §2.1 clause 7); only the ": "(C-ENGINE-1); by C-CREATE-3 only the ",
    '"""SPEC §2.2 get, put, delete, values and handles; §2.1 clause 5 (no partial record)."""':
        '"""get, put, delete, values and handles (C-GET-1, C-PUT-1, C-DEL-1, C-VAL-1,\n'
        'C-HANDLE-1, C-HANDLE-3), and no partial record (C-CREATE-4)."""',
    '"""SPEC §2.1: the write-once create, one call at a time (clauses 1, 2, 3 and 6)."""':
        '"""The write-once create, one call at a time (C-CREATE-1, C-CREATE-3, C-CREATE-5)."""',
    "SPEC §2.2 keys:": "Keys (C-KEY-1 to 3):",
    # Where a section was the sentence's subject, the sentence is reworded.
    '"""SPEC §6.4 on the store under test:': '"""Crash points on the store under test:',
    '"""SPEC §6.5: the wait lifecycle': '"""The wait lifecycle',
    '"""SPEC §6.3: the six orderings': '"""The six orderings',
    '"""SPEC §6.5, in parallel:': '"""The wait lifecycle in parallel:',
    '"""SPEC §6.5: the store, driven': '"""The store, driven',
    "FaultyStore injects each SPEC §6.4 fault": "FaultyStore injects each fault",
    "whoever settles first wins (SPEC §3, §4.5).": "whoever settles first wins (docs/explanation/answers.md).",
    "fenced saves (SPEC §4.3). FakeClock drives ages.": "fenced saves. FakeClock drives ages.",
    "(SPEC §3, §4.5, §4.7)": "(docs/explanation/answers.md)",
    "on one handle (SPEC §4.4-4.6)": "on one handle (docs/explanation/engine.md)",
    "Two hosts, one bucket (SPEC §1, §7):": "Two hosts, one bucket (docs/how-to/multi-host.md):",
    "SPEC §2.2 list(prefix):": "list(prefix) (C-LIST-1, C-LIST-2):",
    "SPEC §2.2: `a` and `a/b` are separate records": "C-KEY-3: `a` and `a/b` are separate records",
    "SPEC §2.2: ``a`` and ``a/b`` may both exist": "C-KEY-3: ``a`` and ``a/b`` may both exist",
    "Key rules (SPEC §2.2)": "Key rules (C-KEY-1)",
    "the key rules of SPEC §2.2": "the key rules of {C-KEY-1}",
    "value size (SPEC §2.2)": "value size (C-VAL-1)",
    "must hold (SPEC §2.2)": "must hold ({C-VAL-1})",
    "so SPEC §2.1 and §2.2 are broken": "so {C-KEY-3} is broken",
    "no cached listings: SPEC §2.3": "no cached listings (C-HANDLE-1)",
    "SPEC §2.1 and §6.5: concurrent histories": "C-CREATE-2 and C-HANDLE-1: concurrent histories",
    "choices this implementation makes where SPEC §3\u2013§4 leaves room":
        "choices this implementation makes where the design leaves room",
    "It is the engine's reading of SPEC §4.5\u2013§4.8 and":
        "It is how the engine reads its promises (C-ENGINE-2) and",
    "the run ends by the SPEC §3 lifetime": "the run ends as a run's lifetime says",
    "and the run ends by the SPEC §3 lifetime": "and the run ends as a run's lifetime says",
    "SPEC §3 leaves the error of a timed-out wait in a cancelled run open":
        "the error of a timed-out wait in a cancelled run is the engine's choice",
    "# The SPEC §4.1 example:": "# The example workflow:",
    "SPEC_EXAMPLE": "FORMAT_EXAMPLE",
    "the SPEC §4.1 format": "the workflow format",
    "like SPEC §4.1.": "the example workflow.",
    "ship / rollback (SPEC §4.1).": "ship / rollback.",
    "Load and check a workflow file (SPEC §4.1).": "Load and check a workflow file.",
    "(SPEC section 2)": "(docs/contract.md)",
    "The five of SPEC §6.6, plus one more": "Five broken designs, plus one more",
    "(beyond SPEC §6.6) ": "",
    "which SPEC §4.4 requires": "as suspension requires",
    "a `ControlPlaneStore` (SPEC §2)": "a `ControlPlaneStore` ({contract})",
    "the engine never trusts that answer, and SPEC\n  §2.1 clause 7 lets a store give it to the "
    "real winner, so this suite must tolerate it;":
        "the engine never trusts that answer, and a lost\n  response can give it to the real "
        "winner (C-LOST-1), so this suite must tolerate it;",
    "`false_to_winner` is among them by design (SPEC §2.1\nclause 7)":
        "`false_to_winner` is among them by design ({C-CREATE-3})",
}

_REF = r"§\s?\d+(?:\.\d+)*(?:,? clauses? \d+(?:(?:, | and |, and )\d+)*| step \d+)?" \
       r"(?: \"[A-Z][A-Za-z ]+\"| lifetime| \"Lifetime\")?"
CITATION = re.compile(r"SPEC\s+(?:section (?P<section>\d+)|(?P<refs>" + _REF
                      + "(?:\\s*(?:,|and|-|\u2013)\\s*(?:" + _REF + r"|\d+(?:\.\d+)+))*))")
_ONE_REF = re.compile(r"§?\s?(?P<num>\d+(?:\.\d+)*)(?:,? clauses? (?P<clauses>[\d, and]+))?")


def _targets(refs: str) -> list[str]:
    out: list[str] = []
    refs = re.sub(r' step \d+|"[^"]*"| lifetime', "", refs)
    for match in _ONE_REF.finditer(refs):
        number = match.group("num")
        clauses = match.group("clauses")
        if clauses and number == "2.1":
            out += [CREATE_CLAUSES[n] for n in re.findall(r"\d+", clauses)]
        elif number.startswith("2.1.") and number.count(".") == 2:
            out.append(CREATE_CLAUSES[number.rsplit(".", 1)[1]])
        elif number in SECTIONS:
            out.append(SECTIONS[number])
        elif number.split(".")[0] in SECTIONS:
            out.append(SECTIONS[number.split(".")[0]])
    return list(dict.fromkeys(out))


def _render(target: str, path: Path) -> str:
    relative = path.relative_to(ROOT).as_posix()
    in_docs = relative.startswith("docs/") and path.suffix == ".md"
    if re.fullmatch(r"C-[A-Z]+-\d+", target):
        if in_docs:
            return f"[{target}](contract.md#{target.lower()})"
        if path.suffix == ".md":
            return f"[{target}](docs/contract.md#{target.lower()})"
        return target
    if in_docs and target.startswith("docs/"):
        link = target.removeprefix("docs/")
        if "/" in relative.removeprefix("docs/"):
            link = "../" + link
        return f"[{link.split('#')[0]}]({link})"
    if path.suffix == ".md":
        return f"[{target.split('#')[0]}]({target})"
    return target.split("#")[0]


def rewrite(text: str, path: Path) -> str:
    contract = _render("docs/contract.md", path)
    for old, new in PHRASES.items():
        new = new.replace("{contract}", contract)
        new = re.sub(r"\{(C-[A-Z]+-\d+)\}", lambda m: _render(m.group(1), path), new)
        text = text.replace(old, new)

    def replace(match: re.Match[str]) -> str:
        refs = "2" if match.group("section") else match.group("refs")
        targets = _targets(refs)
        if not targets:
            return match.group(0)
        return ", ".join(_render(t, path) for t in targets)

    return _fit(CITATION.sub(replace, text), path)


def _fit(text: str, path: Path) -> str:
    """Shorten comment rulers (``# --- x ----``) that a longer reference pushed past 100."""
    if path.suffix != ".py":
        return text
    lines = []
    for line in text.split("\n"):
        over = len(line) - 100
        ruler = re.search(r"-{3,}$", line)
        if over > 0 and ruler is not None:
            line = line[:ruler.start()] + "-" * max(3, len(ruler.group(0)) - over)
        lines.append(line)
    return "\n".join(lines)


# Generated from docstrings: regenerate them after this pass instead of rewriting them.
GENERATED = ("docs/reference",)


def files() -> list[Path]:
    """Every text file in scope, each once: links (the shipped unkillable ledger) and
    generated pages are left to their sources."""
    found: list[Path] = []
    for name in SCOPE:
        base = ROOT / name
        if base.is_file():
            found.append(base)
        elif base.is_dir():
            found += sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                            and not p.is_symlink() and "__pycache__" not in p.parts
                            and not p.relative_to(ROOT).as_posix().startswith(GENERATED))
    return found


def main(argv: list[str]) -> int:
    check = "--check" in argv
    left: list[str] = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        new = text if check else rewrite(text, path)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
        left += [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                 for n, line in enumerate(new.splitlines(), 1) if "SPEC" in line]
        if new != text and path.suffix == ".py":
            long_lines = [n for n, line in enumerate(new.splitlines(), 1) if len(line) > 100]
            for n in long_lines:
                print(f"rewrap by hand (over 100 characters): {path.relative_to(ROOT)}:{n}",
                      file=sys.stderr)
    for line in left:
        print(f"left: {line}", file=sys.stderr)
    if not check:
        print("now regenerate: python scripts/reference_pages.py --write && "
              "python -m dw_testing.selftest.contract --write docs/contract.md")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

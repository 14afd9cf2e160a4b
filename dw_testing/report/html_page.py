"""The conformance report as one self-contained HTML page, drawn from the report dict.

The page is built from exactly the dict that ``report.json`` holds, after validating it
against the report's JSON Schema, so the two cannot disagree. It loads nothing: no
scripts, no fonts, no images from anywhere (a Content-Security-Policy says so to the
browser), and it reads the same with JavaScript off. A history failure carries its
timeline as inline SVG, drawn by :mod:`dw_testing.history.timeline`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from dw_testing.report.schema import OUTCOME_ORDER, REPORT_SCHEMA, worst

FAILED = ("FAIL", "UNKNOWN")
CONTRACT_DOC = "docs/contract.md"

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 1.5rem;
color:#1b1b1b;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2rem;
border-bottom:1px solid #ccc}h3{font-size:1rem;margin:1rem 0 .3rem;word-break:break-all}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.2rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}
code,pre{font-family:ui-monospace,monospace;font-size:.85rem}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.5rem;overflow-x:auto;
white-space:pre-wrap;word-break:break-word}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
dd{margin:0}.o{font-weight:600;white-space:nowrap}
.o-FAIL{color:#fff;background:#b00020}.o-UNKNOWN{background:#f0c000}
.o-PASS{color:#0a5c1f;background:#dff3e3}.o-XFAIL{background:#dceefa}.o-SKIP{color:#555}
.verdict{font-size:1.1rem;padding:.4rem .6rem;display:inline-block}
.failure{border-left:4px solid #b00020;padding-left:.8rem;margin:1.2rem 0}
figure{margin:.5rem 0;overflow-x:auto}figcaption{font-size:.85rem;color:#444}
.grid td.k{background:#b00020;color:#fff;text-align:center}.grid td.n{text-align:center;
color:#999}.grid th.m{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:400}
.survived{color:#b00020;font-weight:700}.note{color:#444}
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class ReportInvalid(ValueError):
    """The report dict does not fit the report schema, so no page is drawn from it."""


def html_path(path: Path) -> Path:
    """``out/report.json`` -> ``out/report.html`` (``x.html`` -> ``x.html.html``)."""
    return (path.with_name(path.name + ".html") if path.suffix == ".html"
            else path.with_suffix(".html"))


def validate(report: Mapping[str, Any]) -> None:
    """Raise :class:`ReportInvalid` naming the first field that breaks the schema."""
    import jsonschema

    try:
        jsonschema.validate(dict(report), dict(REPORT_SCHEMA))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ReportInvalid(f"the report does not fit its schema at {where}: "
                            f"{exc.validator} failed; build it with ReportBuilder.build") from None


def render_html(report: Mapping[str, Any]) -> str:
    """The page for ``report`` (validated first); a string of UTF-8 HTML."""
    validate(report)
    kill = report.get("kill_matrix")
    if kill and not report["tests"]:  # the self-test: its kill grid is the result
        return _page("dw-testing self-test report", "Self-test report",
                     [_kill_verdict(kill, "verdict")],
                     [_run_section(report), _kill_section(kill, verdict=False)], report)
    stores = ", ".join(report["stores"]) or "no store"
    return _page(f"dw-testing conformance report: {stores}", "Conformance report",
                 [_verdict(report["tests"])], [
                     _run_section(report),
                     _diagnosis_section(report.get("diagnosis")),
                     _capability_section(report),
                     _clause_section(report["tests"]),
                     _failure_section(report["tests"]),
                     _listed_section("deviations", "Known deviations", "XFAIL",
                                     report["tests"], "No known deviation applied in this run."),
                     _listed_section("skips", "Skipped tests", "SKIP", report["tests"],
                                     "No test was skipped."),
                     _leftover_section(report.get("leftovers", {})),
                     _coverage_section(report.get("coverage") or {}),
                     _kill_section(kill),
                 ], report)


def _page(title: str, heading: str, header: list[str], sections: list[str],
          report: Mapping[str, Any]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<header><h1>{escape(heading)}</h1>",
        *header,
        "</header>",
        *sections,
        f'<footer class="note"><p>Report schema {report["schema"]}. Outcomes, worst first: '
        f'{" &gt; ".join(OUTCOME_ORDER)}. This page loads nothing from the network.</p>'
        "</footer></body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


# --- pieces ---------------------------------------------------------------------------------

def _outcome(outcome: str) -> str:
    return f'<span class="o o-{escape(outcome)}">{escape(outcome)}</span>'


def _counts(tests: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOME_ORDER, 0)
    for test in tests:
        counts[str(test["outcome"])] += 1
    return counts


def _verdict(tests: Sequence[Mapping[str, Any]]) -> str:
    counts = _counts(tests)
    overall = worst(str(t["outcome"]) for t in tests) if tests else "SKIP"
    summary = ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "no tests ran"
    return (f'<p class="verdict o-{escape(overall)}" id="verdict">'
            f"{escape(overall)}: {escape(summary)}</p>")


def _run_section(report: Mapping[str, Any]) -> str:
    stores = ", ".join(report["stores"]) or "the mutant stores and engine variants"
    rows = [("stores", stores), ("profile", str(report["profile"])),
            ("seed", "none" if report["seed"] is None else str(report["seed"]))]
    versions = report.get("versions") or {}
    if versions:
        rows.append(("versions", ", ".join(f"{k} {v}" for k, v in versions.items())))
    body = "".join(f"<dt>{escape(k)}</dt><dd><code>{escape(v)}</code></dd>" for k, v in rows)
    replay = report.get("replay")
    command = (f"<p>Replay this run:</p>"
               f'<pre id="replay"><code>{escape(str(replay))}</code></pre>' if replay else
               '<p class="note">The command that replays this run was not recorded.</p>')
    return f'<section id="run"><h2>Run</h2><dl>{body}</dl>{command}</section>'


def _capability_section(report: Mapping[str, Any]) -> str:
    stores: list[str] = list(report["stores"])
    by_store: Mapping[str, Mapping[str, Any]] = report.get("by_store") or {}
    if not by_store:
        by_store = {stores[0] if len(stores) == 1 else "all": report["capabilities"]}
    columns = list(by_store)
    head = "".join(f"<th>{escape(s)}</th>" for s in columns)
    rows = []
    for name in sorted(report["capabilities"]):
        cells = []
        for store in columns:
            cell = by_store.get(store, {}).get(name)
            cells.append(f"<td>{_outcome(cell['outcome'])}</td>" if cell else "<td>-</td>")
        rows.append(f"<tr><th>{escape(name)}</th>{''.join(cells)}</tr>")
    table = (f'<table id="capabilities-table"><thead><tr><th>capability</th>{head}</tr>'
             f"</thead><tbody>{''.join(rows)}</tbody></table>")
    return f'<section id="capabilities"><h2>Capabilities</h2>{table}</section>'


def _test_list(tests: Iterable[Mapping[str, Any]]) -> str:
    items = "".join(f"<li>{_outcome(str(t['outcome']))} <code>{escape(str(t['nodeid']))}"
                    "</code></li>" for t in tests)
    return f"<ul>{items}</ul>"


def _clause_section(tests: Sequence[Mapping[str, Any]]) -> str:
    by_clause: dict[str, list[Mapping[str, Any]]] = {}
    for test in tests:
        for clause in test.get("clauses") or []:
            by_clause.setdefault(str(clause), []).append(test)
    if not by_clause:
        by_capability: dict[str, list[Mapping[str, Any]]] = {}
        for test in tests:
            by_capability.setdefault(str(test["capability"]), []).append(test)
        groups = "".join(
            f"<h3>{escape(name)} {_outcome(worst(str(t['outcome']) for t in members))}</h3>"
            f"{_test_list(members)}" for name, members in sorted(by_capability.items()))
        return ('<section id="clauses"><h2>Contract clauses</h2><p class="note" '
                'id="no-clauses">No test in this run names a clause of '
                f"<code>{CONTRACT_DOC}</code>, so the tests are listed by capability."
                f"</p>{groups}</section>")
    rows = []
    for clause in sorted(by_clause):
        members = by_clause[clause]
        rows.append(f'<tr id="clause-{escape(clause)}"><th>{escape(clause)}</th>'
                    f"<td>{_outcome(worst(str(t['outcome']) for t in members))}</td>"
                    f"<td>{_test_list(members)}</td></tr>")
    uncited = [t for t in tests if not t.get("clauses")]
    extra = (f"<p class=\"note\">{len(uncited)} test(s) name no clause.</p>" if uncited else "")
    return ('<section id="clauses"><h2>Contract clauses</h2>'
            f"<p>Each clause of <code>{CONTRACT_DOC}</code> that a test in this run checks, "
            "with the worst outcome of its tests.</p><table><thead><tr><th>clause</th>"
            f"<th>outcome</th><th>tests</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            f"</table>{extra}</section>")


def _diagnosis_section(diagnosis: Mapping[str, Any] | None) -> str:
    """The judge's "What is wrong with this store", causes first; nothing on a green run."""
    lines = [str(line) for line in (diagnosis or {}).get("lines", [])]
    if not lines:
        return ""
    return (f'<section id="diagnosis"><h2>{escape(lines[0])}</h2>'
            f'<pre class="message">{escape(chr(10).join(lines[1:]))}</pre></section>')


def _coverage_section(coverage: Mapping[str, Any]) -> str:
    """The input-coverage table: per store, the calls that reached each cell."""
    if not coverage:
        return ""
    tables = []
    for store, table in sorted(coverage.items()):
        cells: Mapping[str, int] = table.get("cells", {})
        rows = "".join(
            f"<tr><td>{escape(dimension)}</td><td><code>{escape(name)}</code></td>"
            f"<td>{escape(position)}</td><td>{int(calls) or '<strong>0</strong>'}</td></tr>"
            for text, calls in cells.items()
            for dimension, name, position in [text.split(" / ", 2)])
        empty = len(table.get("empty", []))
        tables.append(
            f"<h3>{escape(store)}: {len(cells) - empty} of {len(cells)} cells reached</h3>"
            "<table><thead><tr><th>dimension</th><th>class</th><th>position</th>"
            f"<th>calls</th></tr></thead><tbody>{rows}</tbody></table>")
    return ('<section id="coverage"><h2>Input coverage</h2><p>The store calls of every '
            "test, sorted by what their keys, values and lists held; a cell at 0 is a corner "
            "no test reached on that store.</p>" + "".join(tables) + "</section>")


def _failure_section(tests: Sequence[Mapping[str, Any]]) -> str:
    failing = [t for t in tests if t["outcome"] in FAILED]
    if not failing:
        return ('<section id="failures"><h2>Failures</h2><p>No test failed.</p></section>')
    articles = []
    for number, test in enumerate(failing, 1):
        message = str(test.get("message") or test.get("reason") or "")
        clauses = ", ".join(str(c) for c in test.get("clauses") or [])
        facts = (f"store <code>{escape(str(test['store']))}</code>, capability "
                 f"<code>{escape(str(test['capability']))}</code>"
                 + (f", clause {escape(clauses)}" if clauses else ""))
        history = test.get("history")
        figure = _history_figure(history) if isinstance(history, Mapping) else ""
        articles.append(
            f'<article class="failure" id="failure-{number}"><h3>{_outcome(test["outcome"])} '
            f"<code>{escape(str(test['nodeid']))}</code></h3><p>{facts}</p>"
            f'<pre class="message">{escape(message)}</pre>{figure}</article>')
    return (f'<section id="failures"><h2>Failures ({len(failing)})</h2>'
            f"{''.join(articles)}</section>")


def _history_figure(history: Mapping[str, Any]) -> str:
    from dw_testing.history.violation import HistoryViolation

    violation = HistoryViolation.from_json(dict(history))
    key = escape(str(history.get("key")))
    left_out = int(history.get("left_out") or 0)
    cut = f"; {left_out} more call(s) of the violation left out" if left_out else ""
    return (f'<figure class="history"><figcaption>Key <code>{key}</code>: '
            f"{len(violation.ops)} of its {history.get('key_calls')} calls{cut}. Marked calls "
            "cannot be placed together in any order; hover a call for its interval and "
            f"result.</figcaption>{violation.render_svg()}</figure>")


def _listed_section(anchor: str, title: str, outcome: str,
                    tests: Sequence[Mapping[str, Any]], empty: str) -> str:
    chosen = [t for t in tests if t["outcome"] == outcome]
    if not chosen:
        return f'<section id="{anchor}"><h2>{title}</h2><p>{escape(empty)}</p></section>'
    rows = "".join(f"<tr><td><code>{escape(str(t['store']))}</code></td>"
                   f"<td><code>{escape(str(t['nodeid']))}</code></td>"
                   f"<td>{escape(str(t['reason']) or 'no reason given')}</td></tr>"
                   for t in chosen)
    return (f'<section id="{anchor}"><h2>{title} ({len(chosen)})</h2><table><thead><tr>'
            f"<th>store</th><th>test</th><th>reason</th></tr></thead><tbody>{rows}</tbody>"
            "</table></section>")


def _leftover_section(leftovers: Mapping[str, int]) -> str:
    found = {store: count for store, count in leftovers.items() if count}
    if not found:
        return ""
    items = "".join(
        f"<li><code>{escape(store)}</code>: " + (
            "the leftover check itself failed" if count < 0 else
            f"{count} <code>dwc-</code> key(s) left behind") + "</li>"
        for store, count in found.items())
    return (f'<section id="leftovers"><h2>Leftover keys</h2><p>Keys the run left behind: '
            f"the store's delete or list may be broken.</p><ul>{items}</ul></section>")


def _kill_verdict(kill: Mapping[str, Any], ident: str = "") -> str:
    mutants = list(kill["mutants"])
    survivors = [m["name"] for m in mutants if not m["killed_by"]]
    anchor = f' id="{ident}"' if ident else ""
    if survivors:
        return (f'<p class="verdict o-FAIL"{anchor}>Survived: '
                f'{escape(", ".join(survivors))}</p>')
    return (f'<p class="verdict o-PASS"{anchor}>Every one of the {len(mutants)} mutants '
            "and engine variants was killed.</p>")


def _kill_section(kill: Mapping[str, Any] | None, *, verdict: bool = True) -> str:
    if not kill:
        return ""
    tests: list[str] = list(kill["tests"])
    mutants: list[Mapping[str, Any]] = list(kill["mutants"])
    labels = {m["name"]: f"{'E' if m['level'] == 'engine' else 'M'}{i}"
              for i, m in enumerate(mutants, 1)}
    killed = {(m["name"], t) for m in mutants for t in m["killed_by"]}
    head = "".join(f'<th class="m" title="{escape(m["name"])}">{labels[m["name"]]} '
                   f'{escape(m["name"])}</th>' for m in mutants)
    unkillable: Mapping[str, str] = kill.get("unkillable") or {}
    rows = []
    for test in tests:
        name = escape(test.rpartition("::")[2])
        cells = "".join(f'<td class="k" title="{name} killed {escape(m["name"])}">X</td>'
                        if (m["name"], test) in killed else '<td class="n"></td>'
                        for m in mutants)
        why = unkillable.get(test)
        note = f'<br><span class="note">unkillable: {escape(why)}</span>' if why else ""
        rows.append(f"<tr><th><code>{name}</code>{note}</th>{cells}</tr>")
    legend = "".join(
        f"<tr><td>{labels[m['name']]}</td><td><code>{escape(m['name'])}</code></td>"
        f"<td>{escape(m['level'])}</td><td>{escape(m.get('defect') or '')}</td>"
        + (f"<td>{len(m['killed_by'])}</td>" if m["killed_by"] else
           '<td class="survived">SURVIVED</td>') + "</tr>" for m in mutants)
    said = _kill_verdict(kill) if verdict else ""
    return (f'<section id="kill-matrix"><h2>Kill matrix</h2>{said}'
            "<p>Rows are the tests, columns the broken stores (M) and engine variants (E); "
            "X: the test failed on it, which is what it is for.</p>"
            f'<table class="grid" id="kill-grid"><thead><tr><th>test</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            "<table><thead><tr><th>#</th><th>name</th><th>level</th><th>defect</th>"
            f"<th>kills</th></tr></thead><tbody>{legend}</tbody></table></section>")

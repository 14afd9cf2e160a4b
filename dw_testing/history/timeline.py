"""Timelines of recorded calls: one lane per process, one bar per call, as text or SVG.

Public interface (the HTML report calls it too):

* :func:`render_text` draws a timeline for a terminal, with box-drawing characters or,
  where the encoding cannot show them, plain ASCII.
* :func:`render_svg` draws the same timeline as one self-contained inline ``<svg>``.
* :func:`cut_window` chooses which calls a long history shows.

Calls are identified by their **index into the ``ops`` sequence passed in**; ``marked``
holds such indices (an :class:`~dw_testing.history.events.Operation` has no identity of
its own: two identical calls are two calls). Marked calls are the ones that cannot be
placed together (drawn heavy, with a ``▶`` in the margin); the others explain them and are
drawn plainly. A call that never returned (it raised: ``ret is None``) runs off to the
right edge. A call that met a fault on the wire (its ``fault``, from a
:class:`~dw_testing.kit.fault_proxy.FaultProxy`) names it in a ``fault`` column, and in the
SVG carries class ``faulted``, a mark at its bar's start and the fault in its hover text.

Time runs left to right by *rank*: every call and return stamp of the calls shown gets the
next column, so the picture keeps exactly the order that matters (``a`` precedes ``b`` iff
a's bar ends before b's begins) and drops the nanoseconds that do not.
"""

from __future__ import annotations

import locale
import shutil
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from dw_testing.history.events import Operation
from dw_testing.history.labels import call_label, result_text, stamp_ranks, value_text

DEFAULT_WINDOW = 40
"""How many calls :func:`render_text` draws at most; the rest are counted, not drawn."""
SVG_WINDOW = 200
"""How many calls :func:`render_svg` draws at most (about 100 kB of SVG)."""
FALLBACK_WIDTH = 100
"""The width used when the terminal's cannot be found (output is piped, say)."""
MIN_BAR_WIDTH = 24
_OPEN_TAIL = 5  # columns past the last stamp where a call that never returned runs on


@dataclass(frozen=True)
class Window:
    """The calls a long history shows: indices into ``ops``, ordered by start."""

    shown: tuple[int, ...]
    total: int
    left_out_before: int
    left_out_after: int
    omitted: int = 0
    """Calls cut away before the history was handed over (counted in ``total``)."""

    @property
    def left_out(self) -> int:
        return self.left_out_before + self.left_out_after + self.omitted


@dataclass(frozen=True)
class _Glyphs:
    left: str
    fill: str
    right: str
    single: str
    arrow: str


@dataclass(frozen=True)
class _CharSet:
    plain: _Glyphs
    marked: _Glyphs
    margin: str
    ellipsis: str
    rule: str


_BOX = _CharSet(plain=_Glyphs("├", "─", "┤", "│", "→"), marked=_Glyphs("┣", "━", "┫", "┃", "→"),
                margin="▶", ellipsis="…", rule="─")
_ASCII = _CharSet(plain=_Glyphs("|", "-", "|", "|", ">"), marked=_Glyphs("#", "=", "#", "#", ">"),
                  margin="*", ellipsis="...", rule="-")


def _order(ops: Sequence[Operation]) -> list[int]:
    return sorted(range(len(ops)), key=lambda i: (ops[i].call, ops[i].process, i))


def cut_window(ops: Sequence[Operation], marked: Collection[int] = (),
               limit: int = DEFAULT_WINDOW) -> Window:
    """At most ``limit`` calls: every marked call (up to ``limit``), then the calls nearest
    in time to the marked ones. Without marked calls, the earliest ``limit`` calls."""
    if limit < 1:
        raise ValueError(f"a timeline window must show at least one call, not {limit}")
    _check_marked(ops, marked)
    order = _order(ops)
    if len(ops) <= limit:
        return Window(tuple(order), len(ops), 0, 0)
    position = {index: rank for rank, index in enumerate(order)}
    if marked:
        first = min(ops[i].call for i in marked)
        last = max(_end(ops[i]) for i in marked)

        def distance(i: int) -> int:
            op = ops[i]
            end = _end(op)
            return 0 if op.call <= last and end >= first else min(
                abs(op.call - last), abs(first - end))

        chosen = sorted(marked, key=position.__getitem__)[:limit]
        rest = sorted((i for i in order if i not in set(marked)),
                      key=lambda i: (distance(i), position[i]))
        chosen += rest[:limit - len(chosen)]
    else:
        chosen = order[:limit]
    shown = sorted(chosen, key=position.__getitem__)
    earliest = position[shown[0]]
    kept = set(shown)
    before = sum(1 for i in order[:earliest] if i not in kept)
    return Window(tuple(shown), len(ops), before, len(ops) - len(shown) - before)


def _end(op: Operation) -> int:
    """A call's return stamp; its invocation for one that never returned."""
    return op.call if op.ret is None else op.ret


def _check_marked(ops: Sequence[Operation], marked: Collection[int]) -> None:
    wrong = [i for i in marked if not 0 <= i < len(ops)]
    if wrong:
        raise ValueError(f"marked calls {sorted(wrong)} are not indices into the {len(ops)} "
                         "calls given; mark calls by their index in ops")


def can_draw_boxes(stream: object = None) -> bool:
    """Whether ``stream`` (default: stdout) can encode the box-drawing characters."""
    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None)
    encoding = encoding or locale.getpreferredencoding(False)
    sample = "".join(vars(_BOX.plain).values()) + "".join(vars(_BOX.marked).values()) + "▶…"
    try:
        sample.encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def _left_out_line(window: Window, ellipsis: str) -> str:
    where = ("" if window.omitted else
             f" ({window.left_out_before:,} earlier, {window.left_out_after:,} later)")
    return (f"{ellipsis} {window.left_out:,} of {window.total:,} calls left out{where}: "
            f"the {len(window.shown):,} nearest the violation are drawn")


def _fit(text: str, width: int, ellipsis: str) -> str:
    if len(text) <= width:
        return text
    return text[:max(0, width - len(ellipsis))] + ellipsis


def render_text(ops: Sequence[Operation], *, marked: Collection[int] = (),
                width: int | None = None, ascii: bool | None = None,
                window: int | None = None, omitted: int = 0) -> str:
    """The table of ``ops`` with a timeline beside it: one lane per process, one row and one
    bar per call, labelled with op, value digest, result and interval (ranks).

    ``marked`` are indices into ``ops``. ``width`` defaults to the terminal's
    (``shutil.get_terminal_size``, so ``COLUMNS`` overrides it); the bars take what the
    columns leave, at least 24 characters. ``ascii`` defaults to whether stdout's encoding
    can show box-drawing characters. ``window`` caps the calls drawn (default
    :data:`DEFAULT_WINDOW`); a line says how many were left out, counting ``omitted`` calls
    the caller had already cut away.
    """
    chars = _ASCII if (not can_draw_boxes() if ascii is None else ascii) else _BOX
    if width is None:
        width = shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns
    cut = _with_omitted(cut_window(ops, marked, DEFAULT_WINDOW if window is None else window),
                        omitted)
    if not cut.shown:
        return "  (no calls)"
    marked_set = set(marked)
    shown = [ops[i] for i in cut.shown]
    rank = stamp_ranks(shown)
    with_keys = len({op.key for op in shown}) > 1
    with_faults = any(op.fault for op in shown)
    header = ["process", "op", *(["key"] if with_keys else []), "value", "result",
              *(["fault"] if with_faults else []), "interval"]
    rows: list[tuple[int, list[str]]] = []
    for name, members in _lanes(shown).items():
        for row, position in enumerate(members):
            op = shown[position]
            until = "inf" if op.ret is None else str(rank[op.ret])
            rows.append((position, [name if row == 0 else "", op.op,
                                    *([op.key] if with_keys else []), value_text(op),
                                    result_text(op),
                                    *([op.fault or ""] if with_faults else []),
                                    f"[{rank[op.call]}, {until}]"]))
    widths = [max(len(cells[c]) for cells in [header, *(r for _, r in rows)])
              for c in range(len(header))]
    table_width = 2 + sum(widths) + 2 * len(widths)
    bar_width = max(MIN_BAR_WIDTH, width - table_width)
    has_open = any(op.indeterminate for op in shown)
    span = bar_width - (_OPEN_TAIL if has_open else 0)
    top = max(1, len(rank) - 1)

    def column(stamp: int) -> int:
        return round(rank[stamp] * (span - 1) / top)

    def line(margin: str, cells: Sequence[str], bar: str) -> str:
        table = "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True))
        return f"{margin} {table}  {bar}".rstrip()

    lines = [line(" ", header, "timeline")]
    for position, cells in rows:
        op = shown[position]
        is_marked = cut.shown[position] in marked_set
        glyphs = chars.marked if is_marked else chars.plain
        bar = [" "] * bar_width
        start = column(op.call)
        end = bar_width - 1 if op.ret is None else column(op.ret)
        if end == start:
            bar[start] = glyphs.single
        else:
            bar[start] = glyphs.left
            bar[start + 1:end] = glyphs.fill * (end - start - 1)
            bar[end] = glyphs.arrow if op.ret is None else glyphs.right
        lines.append(line(chars.margin if is_marked else " ", cells, "".join(bar)))
    lines.append(_legend(shown, [i in marked_set for i in cut.shown], chars))
    if cut.left_out:
        lines.append("  " + _left_out_line(cut, chars.ellipsis))
    return "\n".join(lines)


def _with_omitted(window: Window, omitted: int) -> Window:
    if omitted < 0:
        raise ValueError(f"omitted counts calls cut away before, so it cannot be {omitted}")
    return Window(window.shown, window.total + omitted, window.left_out_before,
                  window.left_out_after, omitted)


def _lanes(shown: Sequence[Operation]) -> dict[str, list[int]]:
    """Process name -> positions of its calls, lanes in order of their first call."""
    lanes: dict[str, list[int]] = {}
    for position, op in enumerate(shown):
        lanes.setdefault(op.process, []).append(position)
    return lanes


def _legend(shown: Sequence[Operation], marked: Sequence[bool], chars: _CharSet) -> str:
    parts = []
    if any(marked):
        m = chars.marked
        fault = "has no legal place" if sum(marked) == 1 else "cannot be placed together"
        parts.append(f"{chars.margin} {m.left}{m.fill * 2}{m.right} {fault}")
    if not all(marked):
        p = chars.plain
        what = ("a call, from its start to its end" if not any(marked)
                else "shown for context" if sum(marked) == 1 else "explains the others")
        parts.append(f"{p.left}{p.fill * 2}{p.right} {what}")
    if any(op.indeterminate for op in shown):
        p = chars.plain
        parts.append(f"{p.left}{p.fill * 2}{p.arrow} never returned")
    if any(op.fault for op in shown):
        parts.append("fault: what the fault proxy did on the wire while the call ran")
    return "  " + "; ".join(parts) + "; time runs left to right"


# --- SVG -----------------------------------------------------------------------------------

_ROW = 18
_BAR = 10
_LANE_PX = 110
_PLOT_PX = 560
_LABEL_PX = 330
_TOP = 8
_MARKED_FILL, _MARKED_STROKE = "#d62728", "#7f0000"
_PLAIN_FILL, _PLAIN_STROKE = "#c7c7c7", "#555555"
_FAULT_FILL, _FAULT_MARK = "#ff7f0e", "\u2715"


def _title(op: Operation, rank: dict[int, int]) -> str:
    end = ("never returned" if op.ret is None
           else f"returned at stamp {op.ret} (rank {rank[op.ret]})")
    met = f"; met on the wire: {op.fault}" if op.fault else ""
    return (f"{op.process}: {call_label(op)}; called at stamp {op.call} "
            f"(rank {rank[op.call]}), {end}; result: {result_text(op)}{met}")


def render_svg(ops: Sequence[Operation], *, marked: Collection[int] = (),
               window: int | None = None, omitted: int = 0) -> str:
    """A self-contained inline ``<svg>``: one ``<g class="call">`` holding one ``<rect>``
    per call drawn, marked calls also of class ``marked``, each with a ``<title>`` (hover
    text: full interval and result). No scripts, styles or external references.
    ``window`` caps the calls drawn (default :data:`SVG_WINDOW`); a ``<text
    class="left-out">`` says how many were left out, counting ``omitted`` calls the caller
    had already cut away."""
    cut = _with_omitted(cut_window(ops, marked, SVG_WINDOW if window is None else window),
                        omitted)
    marked_set = set(marked)
    shown = [ops[i] for i in cut.shown]
    rank = stamp_ranks(shown)
    top = max(1, len(rank) - 1)
    lanes = _lanes(shown)
    has_open = any(op.indeterminate for op in shown)
    span = _PLOT_PX - (24 if has_open else 0)

    def x(stamp: int) -> float:
        return _LANE_PX + rank[stamp] * span / top

    rows = len(shown)
    notes = 2 if cut.left_out else 1
    width = _LANE_PX + _PLOT_PX + _LABEL_PX
    height = _TOP + rows * _ROW + notes * _ROW + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dw-timeline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="timeline of {len(shown)} calls" font-family="monospace" '
        'font-size="11">',
        f"<title>timeline of {len(shown)} of {cut.total} calls; time runs left to right"
        "</title>",
    ]
    row = 0
    for name, members in lanes.items():
        lane_top = _TOP + row * _ROW
        out.append(f'<text class="lane" x="4" y="{lane_top + 12}">'
                   f"{escape(_fit(name, 14, '...'))}</text>")
        if row:
            out.append(f'<line class="lane-rule" x1="0" x2="{width}" y1="{lane_top}" '
                       f'y2="{lane_top}" stroke="#dddddd"/>')
        for position in members:
            op = shown[position]
            index = cut.shown[position]
            is_marked = index in marked_set
            y = _TOP + row * _ROW + (_ROW - _BAR) / 2
            left = x(op.call)
            right = _LANE_PX + _PLOT_PX if op.ret is None else x(op.ret)
            classes = "call marked" if is_marked else "call"
            if op.ret is None:
                classes += " open"
            if op.fault:
                classes += " faulted"
            fill, stroke = ((_MARKED_FILL, _MARKED_STROKE) if is_marked
                            else (_PLAIN_FILL, _PLAIN_STROKE))
            dashed = "" if op.ret is not None else ' stroke-dasharray="4 2"'
            bold = ' font-weight="bold"' if is_marked else ""
            out.append(
                f'<g class="{classes}" data-index="{index}">'
                f"<title>{escape(_title(op, rank))}</title>"
                f'<rect x="{left:.1f}" y="{y:.1f}" width="{max(2.0, right - left):.1f}" '
                f'height="{_BAR}" fill="{fill}" stroke="{stroke}" '
                f'stroke-width="{2 if is_marked else 1}"'
                f"{dashed}/>"
                + (f'<text class="fault-mark" x="{left - 9:.1f}" y="{y + _BAR - 1:.1f}" '
                   f'fill="{_FAULT_FILL}">{_FAULT_MARK}</text>' if op.fault else "")
                + f'<text x="{_LANE_PX + _PLOT_PX + 8}" y="{y + _BAR - 1:.1f}"{bold}>'
                f"{escape(call_label(op))}</text></g>")
            row += 1
    note_y = _TOP + rows * _ROW + 13
    faults = (f"; {_FAULT_MARK}: met a fault on the wire"
              if any(op.fault for op in shown) else "")
    out.append(f'<text class="legend" x="4" y="{note_y}">'
               "red, heavy: cannot be placed together; grey: explains the others; "
               f"dashed to the edge: never returned{faults}</text>")
    if cut.left_out:
        out.append(f"<text class=\"left-out\" x=\"4\" y=\"{note_y + _ROW}\">"
                   f"{escape(_left_out_line(cut, '...'))}</text>")
    out.append("</svg>")
    return "\n".join(out)


__all__ = ["DEFAULT_WINDOW", "SVG_WINDOW", "Window", "can_draw_boxes", "cut_window",
           "render_svg", "render_text"]

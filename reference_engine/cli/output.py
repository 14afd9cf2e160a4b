"""Where output goes: results on stdout (JSON or readable text), progress and notes on stderr.

Lines go out through click; rich is imported only to draw a table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # rich is imported when something is printed, not when dw starts
    from rich.console import Console

JSON_KEY = "dw.json"
COMMAND_KEY = "dw.command"


PIPE_WIDTH = 160  # rich assumes 80 columns off a terminal, which would squeeze ids


def stdout_console() -> Console:
    from rich.console import Console

    # Created per call so click's CliRunner (which swaps sys.stdout) sees the output.
    # markup=False: names and messages come from users and must print literally.
    console = Console(markup=False, highlight=False, soft_wrap=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
    return console


def emit_json(value: Any) -> None:
    """Machine output: one JSON document on stdout."""
    import json

    click.echo(json.dumps(value, indent=2))


# The control codes rich drops from printed text: a name or message that came from a user
# must not ring the bell, backspace over an id or return the cursor. click.echo leaves
# off styles, and strips escape sequences, when the stream is not a terminal.
_CONTROL_CODES = {7: None, 8: None, 11: None, 12: None, 13: None}


def plain(text: str) -> str:
    return text.translate(_CONTROL_CODES)


def say(text: str) -> None:
    """One line of readable output on stdout, never wrapped (ids must stay copyable)."""
    click.echo(plain(text))


def emit_result(document: Mapping[str, Any], line: str, *, as_json: bool) -> None:
    """A command's outcome: ``document`` as JSON with ``--json``, else ``line`` to read."""
    if as_json:
        emit_json(document)
    else:
        say(line)


def note(text: str) -> None:
    """Progress or a hint, on stderr so stdout stays clean for pipes."""
    click.echo(plain(text), err=True)


def progress(text: str) -> None:
    """The engine's progress callback."""
    click.echo(click.style(f"  - {plain(text)}", dim=True), err=True)


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]],
          *, id_columns: Sequence[str] = ()) -> None:
    """A rich table on stdout. Id columns never wrap or shrink, so they can be copied: a
    table whose ids do not fit the terminal is printed wider than it, not cut."""
    from rich.measure import Measurement
    from rich.table import Table

    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    grid = Table(title=title, title_justify="left", show_lines=False)
    for index, name in enumerate(columns):
        if name in id_columns:
            widest = max([len(name), *(len(row[index]) for row in cells)])
            grid.add_column(name, no_wrap=True, min_width=widest)
        else:
            grid.add_column(name)
    for row in cells:
        grid.add_row(*row)
    console = stdout_console()
    needed = Measurement.get(console, console.options.update_width(1 << 16), grid).minimum
    console.print(grid, width=max(console.width, needed), crop=False)


def to_plain(value: Any) -> Any:
    """A view object's JSON form: ``to_json()`` when it has one, else the value itself."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    return value


def as_mapping(value: Any) -> Mapping[str, Any]:
    plain = to_plain(value)
    return plain if isinstance(plain, Mapping) else {}

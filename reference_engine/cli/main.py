"""The ``dw`` group: built-in commands, plugin commands from ``dw.commands``, error handling."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points
from typing import Any

import click

from reference_engine.cli import demo, list_cmds, run_cmds, serve_cmd, store_cmds
from reference_engine.cli.failures import report
from reference_engine.cli.output import COMMAND_KEY, JSON_KEY

PLUGIN_GROUP = "dw.commands"
log = logging.getLogger(__name__)


def _unavailable(name: str, reason: str) -> click.Command:
    """A stand-in for a plugin command that failed to load; it explains itself when run."""

    @click.command(name=name, context_settings={"ignore_unknown_options": True},
                   short_help="(unavailable: its plugin failed to load)", add_help_option=False)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def stub(args: tuple[str, ...]) -> None:
        click.echo(f"dw {name}: this command's plugin failed to load ({reason}); "
                   "reinstall the package that provides it, e.g. pip install dw-testing",
                   err=True)
        raise click.exceptions.Exit(1)

    return stub


class DwGroup(click.Group):
    """Adds plugin commands lazily and turns every exception into one line and exit 1."""

    def _plugin_names(self) -> dict[str, Any]:
        try:
            return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}
        except Exception:  # a broken distribution's metadata must not break dw
            log.debug("cannot read %s entry points", PLUGIN_GROUP, exc_info=True)
            return {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx)) | set(self._plugin_names())
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        builtin = super().get_command(ctx, cmd_name)
        if builtin is not None:
            return builtin
        ep = self._plugin_names().get(cmd_name)
        if ep is None:
            return None
        try:
            loaded = ep.load()
        except Exception as exc:
            log.debug("plugin command %s failed to load", cmd_name, exc_info=True)
            return _unavailable(cmd_name, type(exc).__name__)
        if not isinstance(loaded, click.Command):
            return _unavailable(cmd_name, "not a click command")
        return loaded

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            command = str(ctx.meta.get(COMMAND_KEY) or ctx.command_path)
            ctx.exit(report(exc, json_mode=bool(ctx.meta.get(JSON_KEY)), command=command))


@click.group(cls=DwGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dw-testing", prog_name="dw")
def dw() -> None:
    """dw: run durable workflows on a ControlPlaneStore, and inspect the store.

    \b
    Quick start:   dw demo
    By hand:       dw demo --print-workflow > approval.yaml && dw run approval.yaml
    Every command takes --store URI (default ./.dw, or $DW_STORE) and --json.
    Exit codes: 0 success, 1 refused or failed, 2 usage error, 3 suspended.
    """
    from reference_engine.cli.logs import quiet_library_logs

    quiet_library_logs()


dw.add_command(store_cmds.store)
for command in (*run_cmds.COMMANDS, *list_cmds.COMMANDS, serve_cmd.serve, demo.demo):
    dw.add_command(command)


def main() -> None:
    """Console script entry point."""
    dw.main(prog_name="dw")

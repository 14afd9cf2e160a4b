"""The ``dw`` group: built-in commands, plugin commands from ``dw.commands``, error handling.

``dw`` starts fast: a command's module is imported only when that command runs (or when
``dw --help`` lists the built-ins), and a plugin command's module only when it runs. Each
command module imports the engine, the stores and rich inside its functions.
"""

from __future__ import annotations

import gc
from typing import Any

import click

from reference_engine.cli.output import COMMAND_KEY, JSON_KEY

PLUGIN_GROUP = "dw.commands"
PLUGINS_KEY = "dw.plugins"


def _debug(message: str, *args: object) -> None:
    """Why a plugin is missing, for DW_DEBUG-style digging; logging loads only then."""
    import logging

    logging.getLogger(__name__).debug(message, *args, exc_info=True)

# name -> "module:attribute" of each built-in command, imported on first use.
BUILTINS = {
    "answer": "reference_engine.cli.run_cmds:answer",
    "cancel": "reference_engine.cli.run_cmds:cancel",
    "delete": "reference_engine.cli.run_cmds:delete",
    "demo": "reference_engine.cli.demo:demo",
    "resume": "reference_engine.cli.run_cmds:resume",
    "run": "reference_engine.cli.run_cmds:run",
    "runs": "reference_engine.cli.list_cmds:runs",
    "serve": "reference_engine.cli.serve_cmd:serve",
    "show": "reference_engine.cli.list_cmds:show",
    "signal": "reference_engine.cli.run_cmds:signal",
    "store": "reference_engine.cli.store_cmds:store",
    "sweep": "reference_engine.cli.list_cmds:sweep",
    "waits": "reference_engine.cli.list_cmds:waits",
}


def find_plugins() -> dict[str, Any]:
    """Plugin commands by name, each with ``load()`` and ``package``; none imported yet."""
    from reference_engine.cli.plugins import plugin_commands

    return dict(plugin_commands(PLUGIN_GROUP))


def _load_builtin(name: str) -> click.Command:
    import importlib

    module_name, _, attribute = BUILTINS[name].partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(command, click.Command), BUILTINS[name]
    return command


def _unavailable(name: str, reason: str,
                 fix: str = "reinstall the package that provides it, e.g. pip install dw-testing",
                 ) -> click.Command:
    """A stand-in for a plugin command that failed to load; it explains itself when run."""

    @click.command(name=name, context_settings={"ignore_unknown_options": True},
                   short_help="(unavailable: its plugin failed to load)", add_help_option=False)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def stub(args: tuple[str, ...]) -> None:
        click.echo(f"dw {name}: this command's plugin failed to load ({reason}); {fix}",
                   err=True)
        raise click.exceptions.Exit(1)

    return stub


class DwGroup(click.Group):
    """Loads built-in and plugin commands lazily; turns every exception into one line and
    exit 1."""

    def _plugin_names(self, ctx: click.Context) -> dict[str, Any]:
        # Read once per invocation: finding plugins reads every distribution's metadata.
        meta = ctx.find_root().meta
        if PLUGINS_KEY not in meta:
            try:
                meta[PLUGINS_KEY] = {name: found for name, found in find_plugins().items()
                                     if name not in BUILTINS}
            except Exception:  # a broken distribution's metadata must not break dw
                _debug("cannot read %s entry points", PLUGIN_GROUP)
                meta[PLUGINS_KEY] = {}
        plugins: dict[str, Any] = meta[PLUGINS_KEY]
        return plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx)) | set(BUILTINS) | set(self._plugin_names(ctx))
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        builtin = super().get_command(ctx, cmd_name)
        if builtin is not None:
            return builtin
        if cmd_name in BUILTINS:
            return _load_builtin(cmd_name)
        ep = self._plugin_names(ctx).get(cmd_name)
        if ep is None:
            return None
        try:
            loaded = ep.load()
        except ModuleNotFoundError as exc:
            _debug("plugin command %s failed to load", cmd_name)
            dist = ep.package or "its package"
            # dw-testing's own plugin (dw conformance) needs the pytest side of the package.
            fix = ("pip install 'dw-testing[suite]'" if dist == "dw-testing"
                   else f"install what {dist} needs (pip install {dist})")
            return _unavailable(cmd_name, f"it needs the module {exc.name!r}, not installed",
                                fix)
        except Exception as exc:
            _debug("plugin command %s failed to load", cmd_name)
            return _unavailable(cmd_name, type(exc).__name__)
        if not isinstance(loaded, click.Command):
            return _unavailable(cmd_name, "not a click command")
        return loaded

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``dw --help``. A plugin command is described by the package
        that provides it, not imported: its module may be slow to load (dw conformance
        brings in pytest)."""
        plugins = self._plugin_names(ctx)
        rows = []
        width = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            if name in plugins and name not in BUILTINS:
                rows.append((name, f"From {plugins[name].package}; see: dw {name} --help"))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(max(width, 45))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            from reference_engine.cli.failures import report

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


def main() -> None:
    """Console script entry point."""
    try:
        dw.main(prog_name="dw")
    finally:
        # The process is about to exit, and the interpreter's last act would be a full
        # garbage collection over every object the command made, only to free memory the
        # operating system takes back anyway: a few ms of every dw command. Frozen objects
        # are left out of it. (Files, pipes and stores are closed by then, not by the GC.)
        gc.freeze()

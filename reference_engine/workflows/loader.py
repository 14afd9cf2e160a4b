"""Load and check a workflow file. Every refusal is one ``WorkflowError``.

Decisions a user can rely on:
- Names: the workflow name is one key segment ``[A-Za-z0-9_][A-Za-z0-9_.-]*``; job,
  step and input names are ``[A-Za-z_][A-Za-z0-9_-]*`` (so expressions can name them,
  and ``[``, ``]``, ``/`` never appear: ``s[0]`` is the executor's iteration name).
  All names are at most 100 characters.
- Step names are unique across the whole workflow.
- ``inputs`` holds defaults (any JSON). :func:`with_inputs` applies ``--input k=v``
  overrides; an override for an undeclared input is refused.
- ``when:``, ``for_each:`` expressions and ``${{ }}`` templates (in log, fail and shell)
  are CEL, compiled and type-checked at load time (inputs typed from their defaults). They
  may read declared inputs, the steps of jobs this job depends on (directly or
  transitively), earlier steps of the same job (not in ``when:``),
  ``failed()``/``succeeded()`` of those jobs, and ``item`` inside a ``for_each`` step.
  Anything else is refused with the line and column and a fix.
- Language: a workflow's ``source`` carries ``expressions: cel``. A stored run's snapshot
  without it was written in the old expression language, and keeps its old meaning
  (``stored=True``: translated by :mod:`.legacy`); a new file in the old form is refused
  with its CEL spelling.
- ``wait_for_signal: {timeout, schema}``: timeout is 1..31536000 seconds; schema is
  optional (absent: any JSON is accepted) and must stay inside the subset.
- ``Workflow.source`` is the validated plain-JSON mapping, as written; feeding it
  back to :func:`parse_workflow` rebuilds an equal Workflow.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from reference_engine.stores.keys import key_problem
from reference_engine.workflows.cel import Program, Scope, compile_cel, compile_old
from reference_engine.workflows.errors import WorkflowError, shown
from reference_engine.workflows.interpolate import split_template
from reference_engine.workflows.model import STEP_KINDS, Job, Step, WaitSpec, Workflow
from reference_engine.workflows.schema_subset import check_schema

__all__ = ["WorkflowError", "load_workflow", "parse_workflow", "with_inputs"]

MAX_FILE_BYTES = 1024 * 1024
MAX_VALUES = 100_000  # values walked in one workflow: stops alias bombs and giant files
MAX_TIMEOUT = 31_536_000
MAX_SLEEP = 31_536_000
MAX_FOR_EACH_ITEMS = 1000  # the executor should apply the same cap to expression results
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}")
WORKFLOW_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
PYTHON_TARGET_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
TOP_KEYS = ("name", "description", "inputs", "jobs", "expressions")
LANGUAGE_KEY, CEL = "expressions", "cel"
_FIXES = (("undeclared reference", "the names are inputs, steps, jobs, item (inside for_each) "
           "and CEL's own functions with failed('job') and succeeded('job')"),
          ("no matching overload", "the types do not fit (an input has its default's type); "
           "convert with string(), int() or double(), or compare like with like"),
          ("Syntax error", "fix the CEL syntax there"))
JOB_KEYS = ("steps", "depends_on", "when")
STEP_OPTIONS = ("for_each", "allow_failure")
WAIT_KEYS = ("timeout", "schema")
TEMPLATED_KINDS = ("log", "fail", "shell")


def load_workflow(path: str | os.PathLike[str]) -> Workflow:
    """Read, parse and check the YAML workflow at ``path``."""
    origin = f"workflow file '{os.fspath(path)}'"
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise WorkflowError(f"{origin} is not a regular file (a FIFO, device or "
                                    "socket); save the workflow to a .yaml file and pass that")
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise WorkflowError(f"{origin} does not exist; check the path") from None
    except IsADirectoryError:
        raise WorkflowError(f"{origin} is a directory; name a .yaml file") from None
    except OSError as exc:
        raise WorkflowError(f"{origin} cannot be read ({exc.strerror or 'I/O error'}); "
                            "check its permissions") from None
    if len(raw) > MAX_FILE_BYTES:
        raise WorkflowError(f"{origin} is over {MAX_FILE_BYTES // 1024} KiB; split it up")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise WorkflowError(f"{origin} is not UTF-8 text; save it as UTF-8") from None
    return parse_workflow(load_yaml(text, origin=origin), origin=origin, text=text)


def load_yaml(text: str, *, origin: str = "workflow") -> Any:
    """``yaml.safe_load`` with duplicate keys refused; every failure is a WorkflowError.

    PyYAML is imported here, on first use: a resume parses its run's snapshot, which is
    JSON already, and should not pay for it.
    """
    from reference_engine.workflows.yaml_text import load_yaml as strict_load

    return strict_load(text, origin=origin)


# ---------------------------------------------------------------------------- plain JSON


def _plain_json(value: Any, origin: str) -> Any:
    """A deep copy of ``value`` as plain JSON (dict/list/str/int/float/bool/None)."""
    budget = [MAX_VALUES]

    def copy(item: Any, where: str, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > 64:
            raise WorkflowError(f"{origin} is too large or nests too deeply (over "
                                f"{MAX_VALUES} values or 64 levels); simplify it")
        if item is None or isinstance(item, (bool, int, str)):
            return item
        if isinstance(item, float):
            if not math.isfinite(item):
                raise WorkflowError(f"{origin}: {where} holds NaN or infinity; write a finite "
                                    "number")
            return item
        if isinstance(item, (list, tuple)):
            return [copy(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(item)]
        if isinstance(item, Mapping):
            out: dict[str, Any] = {}
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise WorkflowError(f"{origin}: {where} has a key that is "
                                        f"{_kind(key)}, not text; quote the key")
                out[key] = copy(sub, f"{where}.{shown(key, 40)}", depth + 1)
            return out
        raise WorkflowError(f"{origin}: {where} holds {_kind(item)}, which is not plain JSON; "
                            "quote it as text")

    return copy(value, "the document", 0)


def _kind(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
             str: "text", list: "a list", dict: "a mapping"}
    return names.get(type(value), f"a {type(value).__name__}")


# ---------------------------------------------------------------------------- parsing


class _Checker:
    """Builds the Workflow from plain JSON, raising at the first problem."""

    def __init__(self, source: Any, origin: str, *, old: bool, text: str | None) -> None:
        self.source = source
        self.origin = origin
        self.old = old  # a stored run's snapshot in the old expression language
        self.text = text  # the file's text, to name the line of a refused expression
        self.inputs: Mapping[str, Any] = {}
        self.step_owner: dict[str, str] = {}  # step name -> job name

    def fail(self, where: str, problem: str) -> WorkflowError:
        return WorkflowError(f"{self.origin}: {where}: {problem}" if where
                             else f"{self.origin}: {problem}")

    def mapping(self, value: Any, where: str, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"{what} must be a mapping, got {_kind(value)}")
        return value

    def unknown_keys(self, mapping: Mapping[str, Any], allowed: tuple[str, ...], where: str,
                     what: str) -> None:
        for key in mapping:
            if key not in allowed:
                raise self.fail(where, f"unknown key '{shown(key)}' in {what}; use only "
                                f"{', '.join(allowed)}")

    def name(self, value: Any, where: str, what: str) -> str:
        if not isinstance(value, str) or not NAME_RE.fullmatch(value):
            raise self.fail(where, f"{what} must be a name of letters, digits, '_' and '-' "
                            "that starts with a letter or '_' (at most 100 characters)")
        return value

    def build(self) -> Workflow:
        top = self.mapping(self.source, "", "the workflow")
        self.unknown_keys(top, TOP_KEYS, "", "the workflow")
        name = top.get("name")
        if not isinstance(name, str) or not WORKFLOW_NAME_RE.fullmatch(name) \
                or key_problem(name) is not None:
            raise self.fail("", "'name' must be one path segment of letters, digits, '_', "
                            "'-' and '.' (at most 100 characters), like name: approval")
        self.origin = f"{self.origin} (workflow '{name}')" if "file" in self.origin \
            else f"workflow '{name}'"
        if "description" in top and not isinstance(top["description"], str):
            raise self.fail("description", "the description must be text")
        inputs = self.mapping(top.get("inputs") or {}, "inputs",
                              "'inputs' (input name -> default)")
        for key in inputs:
            self.name(key, f"input '{shown(key)}'", "an input name")
        self.inputs = inputs
        language = top.get(LANGUAGE_KEY, CEL)
        if language != CEL:
            raise self.fail(LANGUAGE_KEY, "'expressions' takes only cel (or leave it out)")
        jobs_raw = top.get("jobs")
        if not isinstance(jobs_raw, dict) or not jobs_raw:
            raise self.fail("jobs", "'jobs' must be a non-empty mapping of job name -> job")
        jobs = {self.name(job_name, f"job '{shown(job_name)}'", "a job name"):
                self.job(job_name, raw) for job_name, raw in jobs_raw.items()}
        source = self.source if self.old else {**self.source, LANGUAGE_KEY: CEL}
        workflow = Workflow(name=name, inputs=inputs, jobs=jobs, source=source)
        self.check_graph(workflow)
        self.check_references(workflow)
        return workflow

    def job(self, job_name: str, raw: Any) -> Job:
        where = f"job '{job_name}'"
        job = self.mapping(raw, where, "a job")
        self.unknown_keys(job, JOB_KEYS, where, "a job")
        steps_raw = job.get("steps")
        if not isinstance(steps_raw, list) or not steps_raw:
            raise self.fail(where, "'steps' must be a non-empty list of steps")
        depends = job.get("depends_on") or []
        if isinstance(depends, str):
            depends = [depends]
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise self.fail(where, "'depends_on' must be a list of job names")
        if len(set(depends)) != len(depends):
            raise self.fail(where, "'depends_on' names a job twice; list each job once")
        when = job.get("when")
        program = None
        if when is not None:
            if not isinstance(when, str):
                raise self.fail(where, f"'when' must be an expression in quotes, got "
                                f"{_kind(when)}; write e.g. when: \"inputs.env == 'prod'\"")
            program = self.expression(when, f"{where} 'when'", condition=True)
            if program.result_type not in ("bool", "dyn"):
                raise self.fail(f"{where} 'when'", f"{self.located(when)}the condition is "
                                f"{program.result_type}, not true or false; compare it, e.g. "
                                "x != '' or size(x) > 0")
        steps = tuple(self.step(job_name, i, s) for i, s in enumerate(steps_raw))
        return Job(name=job_name, steps=steps, depends_on=tuple(depends), when=when,
                   when_program=program)

    def expression(self, text: str, where: str, *, condition: bool = False,
                   item: bool = False) -> Program:
        """``text`` compiled (CEL, or a stored run's old language), or a refusal with a fix."""
        try:
            if self.old:
                return compile_old(text, condition=condition)
            return compile_cel(text, Scope.of(self.inputs, item=item))
        except WorkflowError as exc:
            raise self.fail(where, self.refusal(text, str(exc))) from None

    def refusal(self, text: str, problem: str) -> str:
        from reference_engine.workflows.legacy import cel_form

        if "undeclared reference to 'item" in problem:
            return (f"{self.located(text)}it reads 'item', which exists only inside a step "
                    "with for_each")
        old = cel_form(text)
        if old is not None and old != text.strip():
            return (f"{self.located(text)}'{shown(text, 80)}' is the old expression form; "
                    f"write it in CEL: {old} (docs/reference/expressions.md)")
        fix = next((f for key, f in _FIXES if key in problem),
                   "see docs/reference/expressions.md")
        return f"{self.located(text, problem)}the expression '{shown(text, 80)}' is refused " \
               f"({problem}); {fix}"

    def located(self, text: str, problem: str = "") -> str:
        """``line N, column M: `` of ``text`` in the file, when the file's text is known."""
        if self.text is None:
            return ""
        needle = text.strip().splitlines()[0] if text.strip() else text
        leading = len(text) - len(text.lstrip())  # CEL counts columns from the raw text
        for number, line in enumerate(self.text.splitlines(), start=1):
            at = line.find(needle)
            if at >= 0:
                found = re.search(r"column (\d+)", problem)
                col = at - leading + (int(found.group(1)) if found else leading + 1)
                return f"line {number}, column {col}: "
        return ""

    def step(self, job_name: str, index: int, raw: Any) -> Step:
        where = f"job '{job_name}', step {index + 1}"
        step = self.mapping(raw, where, "a step")
        name = step.get("name")
        if name is None:
            raise self.fail(where, "the step has no 'name'; add name: <unique-step-name>")
        self.name(name, where, "the step name")
        where = f"job '{job_name}', step '{name}'"
        if name in self.step_owner:
            other = self.step_owner[name]
            raise self.fail(where, f"the step name is already used in job '{other}'; step "
                            "names must be unique across the workflow, so rename one")
        self.step_owner[name] = job_name
        kinds = [k for k in step if k in STEP_KINDS]
        for key in step:
            if key != "name" and key not in STEP_KINDS and key not in STEP_OPTIONS:
                raise self.fail(where, f"unknown step kind or key '{shown(key)}'; a step has one "
                                f"of {', '.join(STEP_KINDS)}, plus optional "
                                f"{', '.join(STEP_OPTIONS)}")
        if len(kinds) != 1:
            raise self.fail(where, f"a step needs exactly one kind key of "
                            f"{', '.join(STEP_KINDS)}, found {len(kinds)}")
        kind = kinds[0]
        for_each = step.get("for_each")
        value, template = self.step_value(kind, step[kind], where, item=for_each is not None)
        program = None
        if for_each is not None:
            if isinstance(for_each, str):
                program = self.expression(for_each, f"{where} 'for_each'")
                if program.result_type not in ("list", "dyn"):
                    raise self.fail(f"{where} 'for_each'", f"{self.located(for_each)}the "
                                    f"expression is {program.result_type}, not a list; "
                                    "write a list, e.g. [inputs.a, inputs.b]")
            elif isinstance(for_each, list):
                if len(for_each) > MAX_FOR_EACH_ITEMS:
                    raise self.fail(where, f"'for_each' has over {MAX_FOR_EACH_ITEMS} items; "
                                    "split the work")
            else:
                raise self.fail(where, "'for_each' takes a list or an expression in quotes")
        allow_failure = step.get("allow_failure", False)
        if not isinstance(allow_failure, bool):
            raise self.fail(where, "'allow_failure' takes true or false")
        return Step(name=name, kind=kind, value=value, for_each=for_each,
                    allow_failure=allow_failure, for_each_program=program, template=template)

    def step_value(self, kind: str, value: Any, where: str, *,
                   item: bool) -> tuple[Any, tuple[str | Program, ...] | None]:
        if kind in ("log", "fail", "shell"):
            if not isinstance(value, str):
                raise self.fail(where, f"'{kind}' takes text, got {_kind(value)}; quote it")
            if kind == "shell" and not value.strip():
                raise self.fail(where, "'shell' needs a command")
            try:
                template = split_template(value, lambda text: self.expression(
                    text, f"{where} '{kind}'", item=item))
            except WorkflowError as exc:
                if str(exc).startswith(self.origin):
                    raise
                raise self.fail(where, f"a ${{{{ }}}} template in '{kind}' is broken: "
                                f"{exc}") from None
            return value, template
        if kind == "sleep":
            return float(self.seconds(value, where, "sleep", 0, MAX_SLEEP)), None
        if kind == "python":
            if not isinstance(value, str) or not PYTHON_TARGET_RE.fullmatch(value):
                raise self.fail(where, "'python' takes 'module:function', like "
                                "python: mypkg.tasks:build")
            return value, None
        return self.wait(value, where), None

    def seconds(self, value: Any, where: str, what: str, low: int, high: int) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not low <= value <= high:
            raise self.fail(where, f"'{what}' takes a number of seconds from {low} to {high}")
        return float(value)

    def wait(self, value: Any, where: str) -> WaitSpec:
        spec = self.mapping(value, where, "'wait_for_signal' ({timeout, schema})")
        self.unknown_keys(spec, WAIT_KEYS, where, "wait_for_signal")
        if "timeout" not in spec:
            raise self.fail(where, "'wait_for_signal' needs a timeout in seconds, like "
                            "timeout: 3600")
        timeout = self.seconds(spec["timeout"], where, "timeout", 1, MAX_TIMEOUT)
        schema = spec.get("schema", {})
        check_schema(schema, where=f"{self.origin}: {where}: schema")
        return WaitSpec(timeout=timeout, schema=schema)

    # -- whole-workflow checks

    def check_graph(self, workflow: Workflow) -> None:
        for job in workflow.jobs.values():
            for dep in job.depends_on:
                if dep == job.name:
                    raise self.fail(f"job '{job.name}'", "it depends on itself; remove it from "
                                    "its own depends_on")
                if dep not in workflow.jobs:
                    raise self.fail(f"job '{job.name}'", f"depends_on names job '{shown(dep)}', "
                                    "which does not exist; fix the name")
        state: dict[str, int] = {}  # 1 = on the path, 2 = done

        def visit(name: str, path: list[str]) -> None:
            state[name] = 1
            for dep in workflow.jobs[name].depends_on:
                if state.get(dep) == 1:
                    cycle = [*path[path.index(dep):], dep]
                    raise self.fail("jobs", f"depends_on forms a cycle "
                                    f"({' -> '.join(cycle)}); break it")
                if dep not in state:
                    visit(dep, [*path, dep])
            state[name] = 2

        for name in workflow.jobs:
            if name not in state:
                visit(name, [name])

    def ancestors(self, workflow: Workflow, name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(workflow.jobs[name].depends_on)
        while todo:
            dep = todo.pop()
            if dep not in seen:
                seen.add(dep)
                todo.extend(workflow.jobs[dep].depends_on)
        return seen

    def check_references(self, workflow: Workflow) -> None:
        for job in workflow.jobs.values():
            before = self.ancestors(workflow, job.name)
            visible = {s.name for dep in before for s in workflow.jobs[dep].steps}
            where = f"job '{job.name}'"
            if job.when_program is not None:
                self.refs(job.when_program, workflow, f"{where} 'when'", before,
                          visible, in_for_each=False)
            for step in job.steps:
                here = f"{where}, step '{step.name}'"
                exprs: list[tuple[str, Program]] = []
                if step.for_each_program is not None:
                    exprs.append(("'for_each'", step.for_each_program))
                if step.template is not None:
                    exprs.extend((f"'{step.kind}'", e) for e in step.template
                                 if not isinstance(e, str))
                for what, expr in exprs:
                    self.refs(expr, workflow, f"{here} {what}", before, visible,
                              in_for_each=step.for_each is not None and what != "'for_each'")
                visible = visible | {step.name}

    def refs(self, expr: Program, workflow: Workflow, where: str, jobs: set[str],
             steps: set[str], *, in_for_each: bool) -> None:
        for name in sorted(expr.inputs):
            if name not in workflow.inputs:
                raise self.fail(where, f"it reads inputs.{shown(name)}, which the workflow does "
                                "not declare; add it under inputs: with a default")
        for name in sorted(expr.jobs):
            if name not in workflow.jobs:
                raise self.fail(where, f"it names job '{shown(name)}', which does not exist; "
                                "fix the name")
            if name not in jobs:
                raise self.fail(where, f"it reads job '{shown(name)}', which this job does not "
                                "depend on; add it to depends_on")
        for name in sorted(expr.steps):
            base = name.split("[", 1)[0]
            if base not in self.step_owner:
                raise self.fail(where, f"it reads step '{shown(name)}', which does not exist; "
                                "fix the name")
            if base not in steps:
                raise self.fail(where, f"it reads step '{shown(name)}' of job "
                                f"'{shown(self.step_owner[base])}', which has not run by then; add "
                                "that job to depends_on")
        if expr.uses_item and not in_for_each:
            raise self.fail(where, "it reads 'item', which exists only inside a step with "
                            "for_each")


def parse_workflow(mapping: Any, *, origin: str = "workflow", stored: bool = False,
                   text: str | None = None) -> Workflow:
    """Check ``mapping`` (parsed YAML, or a run's stored ``source``) and build the Workflow.

    ``stored``: ``mapping`` is a run's snapshot, so one without ``expressions: cel`` was
    written in the old language and keeps its old meaning. Otherwise a secret-shaped value
    anywhere in it is refused (the text is stored with every run). ``text``: the file's
    text, for the line numbers of refusals.
    """
    return _parse(mapping, origin=origin, stored=stored, text=text, secrets=not stored)


def _parse(mapping: Any, *, origin: str, stored: bool, text: str | None,
           secrets: bool) -> Workflow:
    source = _plain_json(mapping, origin)
    if secrets:
        _refuse_secret_literals(source, origin, text)
    old = stored and isinstance(source, dict) and LANGUAGE_KEY not in source
    return _Checker(source, origin, old=old, text=text).build()


def _refuse_secret_literals(source: Any, origin: str, text: str | None) -> None:
    """A new workflow's text is stored with every run: a key pasted into it is refused."""
    from reference_engine.secrets import scan, scan_text

    rule = scan(source)
    if rule is None:
        return
    line = next((n for n, row in enumerate((text or "").splitlines(), start=1)
                 if scan_text(row)), None)
    where = f" at line {line}" if line is not None else ""
    raise WorkflowError(f"{origin} holds a secret-shaped value ({rule}){where}; the workflow's "
                        "text is stored with every run, so pass the secret through the "
                        "environment instead (e.g. shell: 'curl -H \"Authorization: Bearer "
                        "$API_TOKEN\" ...')")


def with_inputs(workflow: Workflow, overrides: Mapping[str, Any] | None) -> Workflow:
    """``workflow`` with input defaults replaced (``dw run --input k=v``).

    An override for an input the workflow does not declare is refused, naming the
    declared ones. Expressions type an input by its default, so text given for an input
    whose default is a number, boolean, list or map is read as JSON of that kind
    (``--input count=5`` is the number 5), and refused when it is not one; text for a text
    or null default stays as given. The returned Workflow's ``source`` carries the
    effective inputs.
    """
    if not overrides:
        return workflow
    for key in overrides:
        if key not in workflow.inputs:
            declared = ", ".join(sorted(workflow.inputs)) or "none"
            raise WorkflowError(f"workflow '{workflow.name}' declares no input "
                                f"'{shown(key)}' (declared: {declared}); add it under "
                                "inputs: with a default, or fix the name")
    source = dict(workflow.source)
    source["inputs"] = {**dict(workflow.inputs),
                        **{k: _typed_override(workflow, k, v) for k, v in overrides.items()}}
    # The overrides pass the engine's own input gate (secret_detected), not this one.
    return _parse(source, origin=f"workflow '{workflow.name}'", stored=False, text=None,
                  secrets=False)


def _typed_override(workflow: Workflow, name: str, value: Any) -> Any:
    import json

    from reference_engine.workflows.cel import cel_type

    wanted = cel_type(workflow.inputs[name])
    if not isinstance(value, str) or wanted in ("string", "dyn"):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    got = cel_type(parsed)
    if got == wanted or (wanted == "double" and got == "int"):
        return parsed
    raise WorkflowError(f"workflow '{workflow.name}': input '{shown(name)}' has a default of "
                        f"type {wanted}, so expressions read it as one; pass a {wanted} in JSON "
                        f"(e.g. --input {shown(name)}={json.dumps(workflow.inputs[name])})")

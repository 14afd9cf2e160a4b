"""Workflow YAML text, read strictly: a key written twice in one mapping is refused."""

from __future__ import annotations

from typing import Any

import yaml

from reference_engine.workflows.errors import WorkflowError, shown


class _DuplicateKey(yaml.constructor.ConstructorError):
    def __init__(self, key: str, mark: yaml.Mark) -> None:
        super().__init__(None, None, f"key {key} appears twice in one mapping", mark)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (YAML would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<' merges are allowed to be overridden by explicit keys
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # unhashable: SafeLoader refuses it below with its own message
                continue
            if duplicate:
                shown = repr(key) if len(repr(key)) <= 60 else repr(key)[:57] + "..."
                raise _DuplicateKey(shown, key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, *, origin: str = "workflow") -> Any:
    """``yaml.safe_load`` with duplicate keys refused; every failure is a WorkflowError."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except _DuplicateKey as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise WorkflowError(f"{origin}: {exc.problem} (line {line}); keep only one of "
                            "them") from None
    except yaml.MarkedYAMLError as exc:
        where = (f" at line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}"
                 if exc.problem_mark else "")
        problem = shown(exc.problem or exc.context or "unreadable", 120)
        raise WorkflowError(f"{origin} is not valid YAML{where}: {problem}; "
                            "fix the syntax there") from None
    except yaml.YAMLError:
        raise WorkflowError(f"{origin} is not valid YAML; fix the syntax") from None
    except RecursionError:
        raise WorkflowError(f"{origin} nests too deeply to read; flatten it") from None
    except (ValueError, TypeError, OverflowError):
        # e.g. a timestamp-looking scalar with month 13: PyYAML raises plain ValueError
        raise WorkflowError(f"{origin} holds a value YAML cannot build (such as an "
                            "impossible date); quote it as text") from None



"""The interpreter parses a workflow's definition once, not once per execution, and each JSONPath once.

moto's Step Functions interpreter builds each execution's program by running the ANTLR parser over the definition
(ExecutionWorker._get_evaluation_entrypoint): most of an execution's CPU time in the rehearsal, for a result that only
depends on the definition's text. Here `AmazonStateLanguageParser.parse` keeps what it built per definition text, for
the whole process: the rehearsals of one template, one after the other, share its programs too.

Sharing one program between executions is sound because its components keep per-execution state in the execution's
environment, not in themselves: the only lazily set attribute is a component's `heap_key`, under which a Retry keeps
its attempt count and back-off in that environment's heap. It is set for every component before the program is
shared, so two executions reaching a retrier for the first time at once cannot give it two keys.

The interpreter also parses every JSONPath it evaluates (a Parameters binding, an InputPath, a Choice's Variable, a
ResultPath) where it evaluates it: jsonpath_ng builds its PLY parser each time, 0.7 ms a path, a fifth of an execution's
CPU. The parsed expression only depends on the path's text and is not changed by evaluating it (`find` and
`update_or_create` build new data, never new nodes), so it is kept per text for the process too.
"""

from __future__ import annotations

import functools
import threading
from types import ModuleType
from typing import Any, ClassVar

from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.utils import json_path

# The interpreter's modules that parse a JSONPath, each with the parser it imported (jsonpath_ng's, its extension's).
_PATH_PARSERS: tuple[tuple[ModuleType, Any], ...] = tuple(
    (module, vars(module)["parse"]) for module in (json_path, result_path)
)


def _settle_heap_keys(program: EvalComponent) -> None:
    """Give every component of the program its heap key now (it is otherwise drawn on first use)."""
    seen: set[int] = set()
    pending: list[Any] = [program]
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, EvalComponent):
            _ = value.heap_key
            pending.extend(vars(value).values())
        elif isinstance(value, list | tuple | set | frozenset):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())


class ParseCache:
    """While installed, `AmazonStateLanguageParser.parse` keeps what it built per definition text, and the
    interpreter's JSONPath parsers what they built per path, in one store for the process."""

    # Definition text -> (program, parse tree), and how many times the real parser ran in this process: once per
    # distinct definition, whichever rehearsal met it first.
    _programs: ClassVar[dict[str, tuple[Any, Any]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()
    parses: ClassVar[int] = 0

    def __init__(self) -> None:
        self._original: Any = None

    def install(self) -> None:
        original = self._original = AmazonStateLanguageParser.parse
        programs, lock = ParseCache._programs, ParseCache._lock

        def parse(definition: str) -> tuple[Any, Any]:
            with lock:
                if definition not in programs:
                    program, tree = original(definition)  # a definition with a syntax error raises, is not kept
                    _settle_heap_keys(program)
                    programs[definition] = (program, tree)
                    ParseCache.parses += 1
                return programs[definition]

        AmazonStateLanguageParser.parse = staticmethod(parse)  # type: ignore[method-assign]
        for module, parser in _PATH_PARSERS:
            setattr(module, "parse", _kept(parser))  # noqa: B010 - patching a module attribute

    def uninstall(self) -> None:
        if self._original is not None:
            AmazonStateLanguageParser.parse = staticmethod(self._original)  # type: ignore[method-assign]
            self._original = None
            for module, parser in _PATH_PARSERS:
                setattr(module, "parse", parser)  # noqa: B010


@functools.cache
def _kept(parser: Any) -> Any:
    """`parser` keeping each path's expression for the process (one wrapper per parser, so rehearsals share it)."""
    return functools.cache(parser)

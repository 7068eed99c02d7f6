"""How a read command prints its result: `--output json|table|text` and `--query` (JMESPath), as the AWS CLI does
(docs/operator-cli.md, "Output formats").

`json` and `text` print the command's JSON document (fire_and_forget/cli/report.py), after `--query` when one is
given; `table` is the rich view of fire_and_forget/cli/render.py. jmespath (botocore's own dependency, so always
installed with boto3) is imported on first use, to keep ff-ops' start-up free of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fire_and_forget.cli.errors import UsageError


class OutputFormat(StrEnum):
    JSON = "json"
    TABLE = "table"
    TEXT = "text"


@dataclass(frozen=True)
class Presentation:
    """The format a command prints in, and the compiled `--query` expression (None: the whole document)."""

    format: OutputFormat = OutputFormat.TABLE
    query: Any = None  # a jmespath ParsedResult

    @property
    def is_table(self) -> bool:
        return self.format is OutputFormat.TABLE

    def render(self, document: dict[str, Any]) -> str:
        """What goes to stdout for `document` (json or text); raises UsageError when the query cannot apply."""
        result: Any = document if self.query is None else _search(self.query, document)
        if self.format is OutputFormat.TEXT:
            return "\n".join(text_lines(result))
        return json.dumps(result, indent=2, sort_keys=False)


def presentation(as_json: bool, output: OutputFormat | None, query: str | None) -> Presentation:
    """The options as given, checked: `--json` is `--output json`; `--query` alone means json; `--query` with
    `--output table` is refused (the table is not the JSON document the query reads)."""
    if as_json and output not in (None, OutputFormat.JSON):
        raise UsageError(f"--json is --output json: it cannot be combined with --output {output}",
                         "give one of them")
    default = OutputFormat.JSON if query is not None else OutputFormat.TABLE
    chosen = OutputFormat.JSON if as_json else output or default
    if query is None:
        return Presentation(chosen)
    if chosen is OutputFormat.TABLE:
        raise UsageError("--query applies to the JSON document: use it with --output json or --output text",
                         "drop --output table, or drop --query")
    return Presentation(chosen, _compile(query))


def _compile(expression: str) -> Any:
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(expression)
    except JMESPathError as error:
        raise UsageError(f"--query {expression!r} is not a valid JMESPath expression: {_first_line(error)}",
                         "see https://jmespath.org/specification.html; quote the expression for the shell") from error


def _search(query: Any, document: dict[str, Any]) -> Any:
    from jmespath.exceptions import JMESPathError

    try:
        return query.search(document)
    except JMESPathError as error:  # e.g. a function given the wrong type: the expression does not fit the document
        raise UsageError(f"--query {query.expression!r} cannot be applied: {_first_line(error)}",
                         "`--output json` without --query shows the document it reads") from error


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def text_lines(value: Any, identifier: str | None = None, columns: list[str] | None = None) -> Iterator[str]:
    """The AWS CLI's text output (https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-output-format.html):
    an object's scalar values on one tab-separated line, sorted alphabetically by key, after the upper-cased
    name of the key that holds the object (none at the top); then each of its lists and objects the same way, named
    by its key. The objects of one list share one set of columns (an empty field where one lacks a key); a list of
    scalars is one line, or one line per value under a name; a list of lists is one line per inner list."""
    if isinstance(value, dict):
        yield from _object_lines(value, identifier, columns)
    elif isinstance(value, list):
        yield from _list_lines(value, identifier)
    else:
        yield scalar_text(value)


def _object_lines(value: dict[str, Any], identifier: str | None, columns: list[str] | None) -> Iterator[str]:
    keys = columns if columns is not None else sorted(k for k, v in value.items() if not _nested(v))
    cells = ["" if _nested(value.get(k)) or k not in value else scalar_text(value[k]) for k in keys]
    if cells:
        yield "\t".join(([identifier.upper()] if identifier is not None else []) + cells)
    for key in sorted(k for k, v in value.items() if _nested(v)):
        yield from text_lines(value[key], key)


def _list_lines(items: list[Any], identifier: str | None) -> Iterator[str]:
    if any(isinstance(item, dict) for item in items):
        columns = sorted({k for item in items if isinstance(item, dict) for k, v in item.items() if not _nested(v)})
        for item in items:
            yield from text_lines(item, identifier, columns if isinstance(item, dict) else None)
        return
    scalars = [scalar_text(item) for item in items if not _nested(item)]
    if scalars and identifier is not None:
        yield from (f"{identifier.upper()}\t{item}" for item in scalars)
    elif scalars:
        yield "\t".join(scalars)
    for item in items:
        if isinstance(item, list):
            yield from text_lines(item, identifier)


def _nested(value: Any) -> bool:
    return isinstance(value, dict | list)


def scalar_text(value: Any) -> str:
    """A scalar as the AWS CLI's text output writes it: null as None, booleans as True/False, the rest as is."""
    if value is None or isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else json.dumps(value)

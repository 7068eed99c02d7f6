"""`python -m fire_and_forget.construct layer DIR`: build the dependencies layer into DIR once (make install does it,
filling uv's cache, so later synths work offline); `... export PROJECT`: write the shipped layer pins
(layer-requirements.txt) from PROJECT's uv.lock."""

from __future__ import annotations

import sys
from pathlib import Path

from fire_and_forget.construct.code import RUNTIME
from fire_and_forget.construct.dependencies_layer import (
    SHIPPED_REQUIREMENTS,
    build_layer,
    locked_requirements,
    shipped_requirements,
)

USAGE = "usage: python -m fire_and_forget.construct layer DIR | export PROJECT"


def main(arguments: list[str]) -> int:
    if len(arguments) != 2 or arguments[0] not in {"layer", "export"}:
        print(USAGE, file=sys.stderr)
        return 2
    command, path = arguments[0], Path(arguments[1])
    if command == "export":
        SHIPPED_REQUIREMENTS.write_text(locked_requirements(path), encoding="utf-8")
        print(f"wrote {SHIPPED_REQUIREMENTS}")
    else:
        path.mkdir(parents=True, exist_ok=True)
        build_layer(path, shipped_requirements(), RUNTIME)
        print(f"Lambda layer built in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

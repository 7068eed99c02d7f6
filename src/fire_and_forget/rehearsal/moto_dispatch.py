"""moto's dispatch of a request lists its response class's methods once per class, not once per request.

`BaseResponse.call_action` looks the action up in `method_names_from_class(type(self))`, which runs
`inspect.getmembers` over the class and its bases for every request (about 2 % of an execution's CPU in the rehearsal).
The list depends only on the class, and the response classes are not changed while they serve requests, so it is
kept per class while installed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from moto.core import responses


def install() -> Callable[[], None]:
    """Answer moto's method list from a cache per class; returns the undo function."""
    original = vars(responses)["method_names_from_class"]  # imported there by name, so replaced there
    listed = functools.cache(lambda clazz: tuple(original(clazz)))

    def method_names_from_class(clazz: object) -> list[str]:
        return list(listed(clazz))

    responses.method_names_from_class = method_names_from_class  # type: ignore[attr-defined]

    def undo() -> None:
        responses.method_names_from_class = original  # type: ignore[attr-defined]

    return undo

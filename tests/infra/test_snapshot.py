"""A tripwire on the whole template: any change must be reviewed and accepted with `make snapshot-update`."""

from __future__ import annotations

import json
import re
from typing import Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def _masked(template: dict[str, Any]) -> Any:
    # Asset hashes change with every handler edit; the handlers have tests of their own.
    return json.loads(ASSET_HASH.sub("<asset-hash>", json.dumps(template)))


def test_template_matches_the_reviewed_snapshot(template: dict[str, Any], snapshot: SnapshotAssertion) -> None:
    assert _masked(template) == snapshot(extension_class=JSONSnapshotExtension)


def test_catalog_template_matches_the_reviewed_snapshot(catalog_template: dict[str, Any],
                                                         snapshot: SnapshotAssertion) -> None:
    assert _masked(catalog_template) == snapshot(extension_class=JSONSnapshotExtension)

"""An invocation runs the code its asset packaged, whatever the process imported under the same names since the
last one: the sweep of `sys.modules` that the rehearsal's Lambda runtime skips when nothing changed
(lambda_runtime._AssetModules) still runs whenever something did."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from fire_and_forget.rehearsal import lambda_runtime

PACKAGE = "ff_probe_asset_pkg"


@pytest.fixture
def asset(tmp_path: Path) -> Iterator[Path]:
    """An asset directory holding one package with one module, imported from there; the names left clean after."""
    root = tmp_path / "asset.probe"
    (root / PACKAGE).mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("")
    (root / PACKAGE / "handler.py").write_text("WHERE = 'asset'\n")
    lambda_runtime._use_asset(root.resolve(), PACKAGE)
    __import__(f"{PACKAGE}.handler")
    yield root.resolve()
    for name in [n for n in sys.modules if n.partition(".")[0] == PACKAGE]:
        del sys.modules[name]
    sys.path.remove(str(root.resolve()))


def foreign(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"/elsewhere/{name.replace('.', '/')}.py"
    return module


def handler_where(asset: Path) -> str:
    lambda_runtime._use_asset(asset, PACKAGE)
    return str(__import__(f"{PACKAGE}.handler", fromlist=["WHERE"]).WHERE)


def test_an_invocation_with_nothing_imported_since_keeps_its_modules(asset: Path) -> None:
    first = sys.modules[f"{PACKAGE}.handler"]
    assert handler_where(asset) == "asset"
    assert sys.modules[f"{PACKAGE}.handler"] is first  # the same execution environment: not imported again


def test_a_module_of_the_same_name_replaced_in_place_is_dropped(asset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a module of another package imported after the handler's, so that the handler's is not the last entry
    monkeypatch.setitem(sys.modules, "ff_probe_unrelated", types.ModuleType("ff_probe_unrelated"))
    handler_where(asset)
    # When a test puts another module under the handler's name, leaving the length and the last entry as they were
    sys.modules[f"{PACKAGE}.handler"] = foreign(f"{PACKAGE}.handler")
    # Then the next invocation imports the asset's own again
    assert handler_where(asset) == "asset"


def test_a_module_of_the_asset_s_package_imported_from_elsewhere_is_dropped(asset: Path) -> None:
    handler_where(asset)
    # Given a module of the asset's package imported from elsewhere since
    sys.modules[f"{PACKAGE}.other"] = foreign(f"{PACKAGE}.other")
    # Then the next invocation drops it
    handler_where(asset)
    assert f"{PACKAGE}.other" not in sys.modules


def test_a_module_removed_then_imported_from_elsewhere_is_dropped(asset: Path) -> None:
    handler_where(asset)
    # Given the handler's module removed and another of that name added, as the last entry, the length unchanged
    del sys.modules[f"{PACKAGE}.handler"]
    sys.modules[f"{PACKAGE}.handler"] = foreign(f"{PACKAGE}.handler")
    assert handler_where(asset) == "asset"


def test_another_asset_in_between_sweeps_again(asset: Path, tmp_path: Path) -> None:
    handler_where(asset)
    # Given another asset's invocation in between, whose package has the same name
    other = tmp_path / "asset.other"
    (other / PACKAGE).mkdir(parents=True)
    (other / PACKAGE / "__init__.py").write_text("")
    (other / PACKAGE / "handler.py").write_text("WHERE = 'other asset'\n")
    try:
        assert handler_where(other.resolve()) == "other asset"
        # Then the first asset's next invocation runs the first asset's code
        assert handler_where(asset) == "asset"
    finally:
        sys.path.remove(str(other.resolve()))

"""CONTRIBUTING.md's walk-through against the code: every file and name it mentions exists (or is one the walk-through
asks a contributor to create), and its recipe, tried on a scratch step, gives a workflow the construct accepts."""

from __future__ import annotations

import ast
import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, cast

import pytest
from markdown_it import MarkdownIt

from fire_and_forget.construct import WiringError, Workflow
from stacks.config import AppConfig
from stacks.orders.stack import ASL_FILE, CLAIMS_DELIVERY, COMPENSATIONS, UNDO, left_out

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "CONTRIBUTING.md"
# The walk-through's example step: the files and names it asks a contributor to create.
NEW = re.compile(r"voucher", flags=re.I)
CODE_ROOTS = ("src", "stacks", "lambdas", "demos", "tests", "bench", "app.py")
TOP_LEVEL = ("src", "stacks", "lambdas", "demos", "tests", "docs", "statemachines", "scripts", "bench")
PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(TOP_LEVEL) + r")/[\w./-]*[\w/])")
# A name of code: dotted, maybe called; with an underscore, a dot or a capital (a plain word such as `nice` is prose).
IDENTIFIER = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(.*\))?")
CODE_LIKE = re.compile(r"[_.A-Z]")
# "`NAME` in stacks/orders/tasks.py", "`NAME` from `lambdas/orders/common/idempotency.py`": defined in that module.
DEFINED_IN = re.compile(r"`([A-Za-z_]\w*)`[^`\n(]{0,20}?\b(?:in|from)\s+`?"
                        r"((?:src|stacks|lambdas|demos|bench)/[\w/.-]+\.py)")


def _spans(text: str) -> list[str]:
    """Every inline code span of the guide."""
    spans = []
    for token in MarkdownIt().parse(text):
        spans += [child.content for child in token.children or [] if child.type == "code_inline"]
    return spans


def _python_files() -> list[Path]:
    found: list[Path] = []
    for root in CODE_ROOTS:
        path = REPO / root
        found += [path] if path.is_file() else sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    return found


def _defined(tree: ast.AST) -> set[str]:
    """Names a module defines: functions, classes, their methods and fields, assigned names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(target) if isinstance(n, ast.Attribute)}
    return names


@cache
def _known() -> frozenset[str]:
    """Every name the code defines or uses (identifiers, attributes, string constants, module and package names),
    and every key and string of the workflows' ASL."""
    names: set[str] = set()
    for path in _python_files():
        if path.is_relative_to(REPO / "tests" / "docs"):
            continue  # these checks name what must not exist
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= _defined(tree) | {path.stem} | set(path.relative_to(REPO).parts[:-1])
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    for path in [*REPO.glob("statemachines/**/*.asl.json"), *REPO.glob("src/**/asl/*.asl.json")]:
        names |= _json_names(json.loads(path.read_text(encoding="utf-8")))
    return frozenset(names)


def _json_names(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {n for v in value.values() for n in _json_names(v)}
    if isinstance(value, list):
        return {n for v in value for n in _json_names(v)}
    return {value} if isinstance(value, str) else set()


def test_every_path_the_guide_names_exists() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    named = {p.rstrip(".") for p in PATH.findall(text)}
    # a file named without its folder (`settings.py`) must be somewhere in the tree
    bare = {s for s in _spans(text) if re.fullmatch(r"[\w-]+\.(py|json|md|txt)", s)}
    tracked = {p.name for p in REPO.rglob("*") if ".venv" not in p.parts and "node_modules" not in p.parts}
    written = set((REPO / ".gitignore").read_text(encoding="utf-8").split())  # what a command writes (mutmut's table)
    missing = sorted(p for p in named if not NEW.search(p) and not (REPO / p).exists())
    missing += sorted(f for f in bare if not NEW.search(f) and f not in tracked | written)
    assert missing == []


def test_every_code_name_the_guide_mentions_is_in_the_code() -> None:
    known = _known()
    unknown = []
    for span in _spans(GUIDE.read_text(encoding="utf-8")):
        match = IDENTIFIER.fullmatch(span.strip())
        if match is None or not CODE_LIKE.search(match.group(1)) or NEW.search(match.group(1)):
            continue  # not a name (ASL, a JSON shape, a command), or one the walk-through creates
        name = match.group(1)
        if name not in known and not all(part in known for part in name.split(".")):
            unknown.append(span)
    assert unknown == []


@pytest.mark.parametrize(("name", "path"), sorted(set(DEFINED_IN.findall(GUIDE.read_text(encoding="utf-8")))))
def test_a_name_the_guide_places_in_a_file_is_defined_there(name: str, path: str) -> None:
    if NEW.search(name):
        pytest.skip(f"{name} is what the walk-through asks a contributor to write")  # noqa: PT030 - placeholder names
    assert name in _defined(ast.parse((REPO / path).read_text(encoding="utf-8"))), f"{name} is not defined in {path}"


def test_the_guides_links_reach_their_sections() -> None:
    broken = []
    for target, anchor in re.findall(r"\]\(([^)#\s]+\.md)#([^)\s]+)\)", GUIDE.read_text(encoding="utf-8")):
        headings = re.findall(r"^#+ (.+)$", (REPO / target).read_text(encoding="utf-8"), flags=re.M)
        slugs = {re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.lower()).strip()) for heading in headings}
        if anchor not in slugs:
            broken.append(f"{target}#{anchor}")
    assert broken == []


def test_the_checks_catch_a_name_and_a_path_that_no_longer_exist() -> None:
    assert "EXPECTED_ERRORS" not in _known() and "saga_tasks" not in _known()
    assert {"TASKS", "TaskSpec", "ORDER_METRICS", "COMPENSATIONS", "UNDO", "run_once"} <= _known()
    assert not (REPO / "src/fire_and_forget/construct/saga_tasks.py").exists()


# -- the recipe on a scratch step (steps 4 and 5) ------------------------------------------------------------------

RESTORE = "RestoreVoucher"


def _with_apply_voucher(tmp_path: Path, *, catch_all: bool = True) -> Path:
    """The order saga's ASL edited as step 5 says: ApplyVoucher after ReserveInventory, RestoreVoucher before
    ReleaseInventory in the undo chains."""
    definition = json.loads(ASL_FILE.read_text(encoding="utf-8"))
    states = definition["States"]
    step = copy.deepcopy(states["ChargePayment"])
    step["Parameters"]["FunctionName"] = "${ApplyVoucherFunctionArn}"
    step["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$", "Next": "ApplyVoucherFailed"}] if catch_all \
        else []
    step["Next"] = "ChargePayment"
    states["ReserveInventory"]["Next"] = "ApplyVoucher"
    failed = copy.deepcopy(states["ChargePaymentFailed"])
    failed["Parameters"]["failure"]["state"] = "ApplyVoucher"
    failed["Next"] = RESTORE
    undo = copy.deepcopy(states["RefundPayment"])
    undo["Parameters"]["FunctionName"] = "${RestoreVoucherFunctionArn}"
    undo["ResultPath"] = "$.compensation.restoreVoucher"
    undo["Catch"][0]["ResultPath"] = "$.compensation.restoreVoucher"
    undo["Next"] = "ReleaseInventory"
    states["RefundPayment"]["Next"] = RESTORE
    placed: dict[str, Any] = {}
    for name, state in states.items():  # each new state where a reader of the file would put it
        placed[name] = state
        placed |= {"ReserveInventory": {"ApplyVoucher": step}, "ChargePaymentFailed": {"ApplyVoucherFailed": failed},
                   "RefundPayment": {RESTORE: undo}}.get(name, {})
    definition["States"] = placed
    path = tmp_path / "order_saga.asl.json"
    path.write_text(json.dumps(definition), encoding="utf-8")
    return path


def _workflow(asl: Path, compensations: tuple[str, ...], undo: dict[str, str]) -> Workflow:
    # The functions only need their state names here: the definition is checked before any is used.
    names = {*UNDO, *UNDO.values(), "ApplyVoucher", RESTORE}
    return Workflow(title="Order saga", definition_file=asl, functions=cast(Any, dict.fromkeys(names)),
                    claims_delivery=CLAIMS_DELIVERY, compensations=compensations, undo=undo,
                    leave_out=left_out(AppConfig()))


def test_the_recipe_gives_a_scratch_step_that_the_construct_accepts(tmp_path: Path) -> None:
    # Given the saga with ApplyVoucher added as steps 4 and 5 say
    compensations = ("CancelShipment", "RefundPayment", RESTORE, "ReleaseInventory")
    assert [c for c in compensations if c != RESTORE] == list(COMPENSATIONS)
    settings = AppConfig()
    workflow = _workflow(_with_apply_voucher(tmp_path), compensations, {**UNDO, "ApplyVoucher": RESTORE})
    # When the construct renders it
    states = workflow.definition(settings)["States"]
    # Then the step is on the happy path with the steps' retries, its undo runs with the compensations' retries, in
    # the chain of every later step, and every chain ends in the failure tail
    assert states["ReserveInventory"]["Next"] == "ApplyVoucher" and states["ApplyVoucher"]["Next"] == "ChargePayment"
    assert states["ApplyVoucher"]["Retry"][0]["MaxAttempts"] == settings.retry.max_attempts
    assert states[RESTORE]["Retry"][0]["MaxAttempts"] == settings.retry.compensation_max_attempts
    assert states["RefundPayment"]["Next"] == RESTORE and states[RESTORE]["Next"] == "ReleaseInventory"
    assert "ClaimFailure" in states
    assert workflow.ordered_undo(workflow.definition(settings))[:2] == (
        ("ReserveInventory", "ReleaseInventory"), ("ApplyVoucher", RESTORE))


def test_the_construct_refuses_the_scratch_step_without_its_catch_or_its_compensation_entry(tmp_path: Path) -> None:
    compensations = ("CancelShipment", "RefundPayment", RESTORE, "ReleaseInventory")
    undo = {**UNDO, "ApplyVoucher": RESTORE}
    # Without the step's States.ALL Catch its failure would end the execution outside the failure tail
    with pytest.raises(WiringError, match="ApplyVoucher.*States.ALL"):
        _workflow(_with_apply_voucher(tmp_path, catch_all=False), compensations, undo).definition(AppConfig())
    # and an undo step missing from COMPENSATIONS would not get the compensations' retries
    with pytest.raises(WiringError, match="RestoreVoucher must also be listed in compensations"):
        _workflow(_with_apply_voucher(tmp_path), COMPENSATIONS, undo)

"""Size and dead-code rules for the application code (STYLE.md items 14 and 15).

- every module at most 600 lines, every function at most 80 (migrations and the demo
  data aside);
- at most 3 functions graded D or worse by radon's cyclomatic complexity;
- vulture finds no unused function, method, class or import (confidence 60 and up) and
  no unused variable or unreachable code it is certain of (confidence 100). Unused
  attributes and class variables are not reported: Django, DRF and the templates read
  those by name. What vulture cannot see used is listed, each with its reason, in
  tools/vulture_allowlist.py.

Run: python tools/check_size.py (exit 1 with the violations listed).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_rank, cc_visit
from vulture import Vulture

ROOT = Path(__file__).resolve().parent.parent
ROOMS = [
    "alerts",
    "api",
    "audiences",
    "console",
    "core",
    "credits",
    "demo",
    "edge",
    "incidents",
    "insights",
    "ops",
    "outbox",
    "portal",
    "postmortems",
    "public_site",
    "statuspage",
    "subscriptions",
]
# Scanned for size too, not for dead code (each script is its own entry point).
SCRIPTS = ["bench", "tools", "docker"]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_D_OR_WORSE = 3
# Demo data is a script of facts (DESIGN: seeds), not logic.
SIZE_EXEMPT = ("demo/incidents.py",)

VULTURE_KINDS = {"function", "method", "class", "import"}
VULTURE_DECORATORS = [
    "@admin.action",
    "@admin.display",
    "@admin.register",
    "@register.filter",
    "@register.simple_tag",
    "@register.inclusion_tag",
    "@shared_task",
    "@SERVER.tool",  # MCP tools (api.mcp_tools), called by the SDK by name
    "@receiver",
    "@property",
    "@cached_property",
    "@extend_schema_field",
    "@action",
    "@register",
]
# Hooks that Django, DRF, Celery and feeds call by name on the classes we give them.
VULTURE_NAMES = [
    "has_*_permission",
    "get_*",
    "save_model",
    "save_related",
    "delete_model",
    "delete_queryset",
    "handle",
    "add_arguments",
    "lookups",
    "queryset",
    "validate",
    "validate_*",
    "Command",
    "*Admin",
    "*Config",
    "*Inline",
    "*Middleware",
    "prepare_value",
    "authenticate_header",
    "label_from_instance",
    "to_representation",
    "to_internal_value",
    "process_*",
    "clean",
    "clean_*",
    "items",
    "item_*",
    "subtitle",
    "as_sql",
    "formfield_for_*",
    "changelist_view",
    "response_*",
    "post",
    "put",
    "patch",
    "delete",
    "dispatch",
    "perform_*",
    "create",
    "update",
    "retrieve",
    "list",
    "destroy",
    "ready",
    "handler400",
    "handler403",
    "handler404",
    "handler500",
]


def python_files(folders: list[str]) -> Iterator[Path]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def size_violations(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        name = str(path.relative_to(ROOT))
        if name in SIZE_EXEMPT:
            continue
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        f"{name}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})"
                    )
    return found


def complex_functions(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        for block in cc_visit(path.read_text()):
            if cc_rank(block.complexity) >= "D":
                name = path.relative_to(ROOT)
                found.append(
                    f"{name}:{block.lineno} {block.name}: {cc_rank(block.complexity)} ({block.complexity})"
                )
    return found


def dead_code(paths: list[Path]) -> list[str]:
    vulture = Vulture(ignore_names=VULTURE_NAMES, ignore_decorators=VULTURE_DECORATORS)
    vulture.scavenge([str(p) for p in paths] + [str(ROOT / "tools" / "vulture_allowlist.py")])
    found = []
    for item in vulture.get_unused_code(min_confidence=60):
        if item.typ in VULTURE_KINDS or item.confidence == 100:
            where = Path(item.filename).relative_to(ROOT)
            found.append(f"{where}:{item.first_lineno} {item.message} ({item.confidence}%)")
    return found


def main() -> int:
    app = [*python_files(ROOMS), ROOT / "manage.py"]
    scripts = list(python_files(SCRIPTS))
    failures = size_violations(app + scripts)
    graded = complex_functions(app)
    dead = dead_code(app)
    if len(graded) > MAX_D_OR_WORSE:
        failures += [f"{len(graded)} functions graded D or worse (at most {MAX_D_OR_WORSE}):", *graded]
    failures += dead
    for line in failures:
        print(line)
    print(
        f"check_size: {len(app) + len(scripts)} modules; {len(graded)} graded D or worse; "
        f"{len(dead)} unused; {'FAILED' if failures else 'ok'}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Which tests depend on the database engine, the cache or the channel layer, read from their source.

CI runs the whole suite on the embedded defaults and, on PostgreSQL + Redis, only the tests marked
`engine` (and `services`). A test that takes real transactions, threads, live servers, other
processes, locks, migrations, raw SQL, the channel layer or a named service behaves differently on
the two engines, so it must carry the marker; test_structure walks every test file with this rule.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Source that behaves differently on SQLite + local memory and on PostgreSQL + Redis.
PATTERNS = [
    (re.compile(r"\btransactional_db\b|transaction\s*=\s*True|TransactionTestCase"), "real transactions"),
    (re.compile(r"LiveServer|\blive_server\b"), "a live server"),
    (re.compile(r"\bthreading\b|ThreadPoolExecutor|\bThread\("), "threads"),
    (re.compile(r"\bselect_for_update\b|\block\b.*\bpg_|advisory"), "row locks"),
    (re.compile(r"channel_layer|CHANNEL_LAYERS"), "the channel layer"),
    (re.compile(r"call_command\(\s*[\"']migrate|MigrationExecutor|MigrationLoader|migrations\.(Migration|RunPython)"), "migrations"),
    (re.compile(r"connection\.vendor|connections\[|\.cursor\(\)|\bpsycopg\b|\bdbpool\b"), "the database connection"),
    (re.compile(r"\bredis\b|REDIS_URL|DATABASE_URL|channels_redis", re.IGNORECASE), "a named service"),
    (re.compile(r"mark\.services\b"), "the services marker"),
    (re.compile(r"subprocess|multiprocessing|Popen"), "other processes"),
]
# Names imported from these modules run servers, threads, processes or the layer for the test.
ENGINE_MODULES = (
    "tests.live_uvicorn",
    "tests.live_processes",
    "tests.live_browser",
    "threading",
    "concurrent.futures",
    "channels.layers",
    "channels.testing",
    "psycopg",
    "redis",
    "subprocess",
    "multiprocessing",
    "django.db.migrations",
)


@dataclass(frozen=True)
class Finding:
    path: Path
    test: str
    reason: str
    marked: bool


def _is_fixture(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)


def _marked(decorators) -> bool:
    return any(re.search(r"mark\.(engine|services)\b", ast.unparse(d)) for d in decorators)


def _engine_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ENGINE_MODULES):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name.startswith(ENGINE_MODULES)}
    return names


def _code(node: ast.AST) -> str:
    """The node's code without comments or docstrings: words in prose say nothing about what a test runs."""
    import copy

    node = copy.deepcopy(node)
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            inner.body = body[1:] or [ast.Pass()]
    return ast.unparse(node)


def _reason(node: ast.AST, engine_names: set[str], engine_fixtures: set[str]) -> str | None:
    source = _code(node)
    for pattern, reason in PATTERNS:
        if pattern.search(source):
            return reason
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    if used & engine_names:
        return f"uses {sorted(used & engine_names)[0]}"
    if isinstance(node, ast.FunctionDef):
        params = {a.arg for a in node.args.args}
        if params & engine_fixtures:
            return f"fixture {sorted(params & engine_fixtures)[0]}"
    return None


def _fixtures(tree: ast.Module, source: str, engine_names: set[str], known: set[str]) -> set[str]:
    """Fixtures of a module that depend on the engine, directly or through another such fixture."""
    fixtures = [n for n in tree.body if _is_fixture(n)]
    found = set()
    changed = True
    while changed:
        changed = False
        for node in fixtures:
            if node.name not in found and _reason(node, engine_names, known | found):
                found.add(node.name)
                changed = True
    return found


def conftest_fixtures() -> set[str]:
    names: set[str] = {"transactional_db", "live_server", "django_db_serialized_rollback"}
    for path in sorted(TESTS.rglob("conftest.py")):
        source = path.read_text()
        tree = ast.parse(source)
        names |= _fixtures(tree, source, _engine_names(tree), names)
    return names


def findings(path: Path, shared_fixtures: set[str] | None = None) -> list[Finding]:
    """Every engine-dependent test in one file, with why, and whether it carries the marker."""
    source = path.read_text()
    tree = ast.parse(source)
    engine_names = _engine_names(tree)
    shared = conftest_fixtures() if shared_fixtures is None else shared_fixtures
    fixtures = shared | _fixtures(tree, source, engine_names, shared)
    module_marked = any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets) and re.search(r"mark\.(engine|services)\b", ast.unparse(n.value))
        for n in tree.body
    )
    out = []
    engine_classes: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            reason = _reason(node, engine_names, fixtures)
            if reason:
                out.append(Finding(path, node.name, reason, module_marked or _marked(node.decorator_list)))
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef) and m.name.startswith("test")]
            class_reason = _reason(node, engine_names, set())
            bases = {ast.unparse(b) for b in node.bases} & engine_classes
            class_reason = class_reason or (f"base {sorted(bases)[0]}" if bases else None)
            if class_reason:
                engine_classes.add(node.name)
            for method in methods:
                reason = class_reason or _reason(method, engine_names, fixtures)
                if reason:
                    marked = module_marked or _marked(node.decorator_list) or _marked(method.decorator_list)
                    out.append(Finding(path, f"{node.name}.{method.name}", reason, marked))
    return out


def test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def mark_unmarked(paths: list[Path] | None = None) -> int:
    """Put `@pytest.mark.engine` on every engine-dependent test that lacks it; returns how many were marked."""
    shared = conftest_fixtures()
    count = 0
    for path in paths or test_files():
        todo = {f.test for f in findings(path, shared) if not f.marked}
        if not todo:
            continue
        source = path.read_text()
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        inserts = []
        for node in tree.body:
            targets = [(node.name, node)] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef):
                targets = [(f"{node.name}.{m.name}", m) for m in node.body if isinstance(m, ast.FunctionDef)]
            for name, target in targets:
                if name in todo:
                    first = min([target.lineno, *(d.lineno for d in target.decorator_list)])
                    inserts.append((first - 1, " " * target.col_offset + "@pytest.mark.engine\n"))
        for index, text in sorted(inserts, reverse=True):
            lines.insert(index, text)
        if not re.search(r"^import pytest$", source, re.MULTILINE):
            at = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")) and "__future__" not in line)
            lines.insert(at, "import pytest\n")
        path.write_text("".join(lines))
        count += len(inserts)
    return count


if __name__ == "__main__":
    print(f"marked {mark_unmarked()} tests @pytest.mark.engine")

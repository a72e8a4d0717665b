"""The shape of the code base: no import cycles between files, files a person can hold in their
head, and one error shape across every API.

The import graph counts every import statement, at module level or inside a function: an import
moved into a function to dodge a cycle still closes it.
"""

from __future__ import annotations

import ast
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# (folder holding the top-level package or scripts, the packages in it)
SOURCES = [(ROOT, ("annotation", "arena", "scoring", "common")), (ROOT / "platform", ("auditorium",)), (ROOT / "bench", ())]
# Scripts run with their own folder on sys.path (bench/load.py imports _setup): named "bench.<stem>"
# here so that bench/scoring.py is not mistaken for the scoring package.
SCRIPTS = "bench"
SKIPPED_PARTS = {"migrations", "__pycache__"}
MAX_LINES = 700


def source_files() -> dict[str, Path]:
    """Dotted module name -> file, for every project module outside migrations and tests."""
    modules: dict[str, Path] = {}
    for base, packages in SOURCES:
        files = [p for package in packages for p in (base / package).rglob("*.py")] if packages else list(base.glob("*.py"))
        for path in files:
            parts = path.relative_to(base).with_suffix("").parts
            if SKIPPED_PARTS & set(parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts if packages else (SCRIPTS, *parts))] = path
    return modules


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        where = "inside a function" if self.in_function else "module level"
        return f"{self.source} -> {self.target} (line {self.line}, {where})"


def _resolve(name: str, modules: dict[str, Path], *, script: bool = False) -> str | None:
    """The project module an import of `name` loads: the name itself or its longest project prefix."""
    if script and f"{SCRIPTS}.{name}" in modules:
        return f"{SCRIPTS}.{name}"
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _walk(tree: ast.AST, in_function: bool = False):
    for node in ast.iter_child_nodes(tree):
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        yield from _walk(node, inside)


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    edges: list[Edge] = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node, in_function in _walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    # Relative: level 1 is the module's own package (a package's own __init__ is that package).
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    base = package[: len(package) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import name` loads pkg.name when that is a module, else pkg itself.
                targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix for alias in node.names]
            script = module.startswith(f"{SCRIPTS}.")
            resolved = {_resolve(target, modules, script=script) for target in targets} - {None, module}
            edges += [Edge(module, target, node.lineno, in_function) for target in sorted(resolved)]
    return edges


@dataclass
class Tangle:
    """Modules that all reach each other through imports: one example cycle and every edge inside."""

    members: set[str]
    cycle: list[Edge]
    inner: list[Edge]

    def __str__(self) -> str:
        route = " -> ".join([self.cycle[0].source, *(e.target for e in self.cycle)])
        lines = [f"{len(self.members)} modules import each other: {', '.join(sorted(self.members))}", f"  for example {route}", "  imports inside the tangle:"]
        files = source_files()
        return "\n".join(lines + [f"    {e}" + (f"  [{files[e.source].relative_to(ROOT)}]" if e.source in files else "") for e in self.inner])


def cycles(edges: list[Edge]) -> list[Tangle]:
    """Each strongly connected component of more than one module, with one cycle through it."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    # Tarjan's algorithm, iterative so deep graphs do not hit the recursion limit.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
    found = []
    for component in components:
        # A shortest way back to the first member, through the component only.
        first = min(component)
        paths = {first: []}
        queue = [first]
        closing = None
        while queue and closing is None:
            node = queue.pop(0)
            for child, edge in sorted(graph.get(node, {}).items()):
                if child not in component:
                    continue
                if child == first:
                    closing = paths[node] + [edge]
                    break
                if child not in paths:
                    paths[child] = paths[node] + [edge]
                    queue.append(child)
        inner = sorted((e for e in edges if e.source in component and e.target in component), key=lambda e: (e.source, e.target, e.line))
        found.append(Tangle(component, closing, inner))
    return found


# --- (a) import cycles -------------------------------------------------------------------------


def test_the_import_graph_sees_relative_function_level_and_package_imports():
    modules = source_files()
    edges = {(e.source, e.target): e for e in import_edges(modules)}
    assert "auditorium.settings" in modules and "arena.tasks" in modules and "arena.migrations.0001_initial" not in modules
    assert ("arena.tasks", "arena.services") in edges  # from . import jobs, services
    assert ("arena.services", "arena.jobs") in edges
    assert ("arena.jobs", "auditorium.celery") in edges
    assert modules["scoring"].name == "__init__.py" and modules["bench.scoring"].parent.name == "bench"
    assert ("bench.load", "bench._setup") in edges
    ready = edges[("arena.apps", "arena.tasks")]
    assert ready.in_function  # the app config's ready() import is counted like any other


def test_cycle_detection_reports_the_path():
    edges = [Edge("a", "b", 1, False), Edge("b", "c", 2, True), Edge("c", "a", 3, False), Edge("c", "d", 4, False)]
    (tangle,) = cycles(edges)
    assert tangle.members == {"a", "b", "c"} and len(tangle.inner) == 3
    assert [(e.source, e.target) for e in tangle.cycle] == [("a", "b"), ("b", "c"), ("c", "a")]
    assert "a -> b -> c -> a" in str(tangle) and "b -> c (line 2, inside a function)" in str(tangle)
    assert cycles([Edge("a", "b", 1, False), Edge("b", "c", 1, False)]) == []


def test_no_import_cycles_between_project_files():
    found = cycles(import_edges(source_files()))
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(str(t) for t in found)


# --- (a2) the shared package stands alone --------------------------------------------------------

APPS = ("annotation", "arena", "scoring")
# The project package (platform/auditorium/) is wiring only: settings, URLs, the servers' entry points and
# request cycle (ASGI handler and its connection watch), Celery, the database pool. What the apps share
# (the ranged audio responses, the deferred audio notes) is in common/.
WIRING = {"asgi", "asgi_handler", "celery", "dbpool", "health", "routing", "runtime", "security", "serve", "settings", "test_settings", "urls", "ws_origin", "wsgi"}


def test_the_shared_package_imports_no_app_and_nothing_of_the_project_package():
    modules = source_files()
    shared = {m for m in modules if m.split(".")[0] == "common"}
    assert {"common.errors", "common.listening", "common.guards", "common.ranged", "common.deferred"} <= shared
    edges = import_edges(modules)
    assert ("common.login_throttle", "common.rates") in {(e.source, e.target) for e in edges}
    bad = [str(e) for e in edges if e.source in shared and e.target.split(".")[0] in (*APPS, "auditorium")]
    assert not bad, "the shared package (common/) must not import an app or the project package:\n" + "\n".join(bad)


def test_the_project_package_holds_only_wiring():
    found = {p.stem for p in (ROOT / "platform" / "auditorium").glob("*.py")} - {"__init__"}
    assert found <= WIRING, f"not wiring, belongs in common/: {sorted(found - WIRING)}"
    assert not (ROOT / "platform" / "__init__.py").exists()


# --- (b) file length ---------------------------------------------------------------------------


def test_no_source_file_over_700_lines():
    long = sorted(
        (len(path.read_text().splitlines()), str(path.relative_to(ROOT)))
        for path in [*source_files().values(), ROOT / "manage.py"]
    )
    over = [f"{name}: {lines} lines" for lines, name in long if lines > MAX_LINES]
    assert not over, f"source files over {MAX_LINES} lines (migrations and tests aside): " + "; ".join(over)


# --- (c) one error shape -----------------------------------------------------------------------

ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def schema():
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_documents_the_error_shape_once(schema):
    error = schema["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"detail", "code"}
    assert error["properties"]["detail"]["type"] == "string" and error["properties"]["code"]["type"] == "string"
    assert error["properties"]["errors"]["type"] == "object"
    assert not [name for name in schema["components"]["schemas"] if name != "Error" and "error" in name.lower()], "a second error component"


def test_every_operation_documents_its_refusals_with_the_error_component(schema):
    problems, operations = [], 0
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            operations += 1
            refusals = {code: body for code, body in operation["responses"].items() if code.startswith("4")}
            if not refusals:
                problems.append(f"{method.upper()} {path}: no 4xx response documented")
            for code, body in refusals.items():
                content = body.get("content", {})
                if "application/json" not in content:
                    problems.append(f"{method.upper()} {path} {code}: no application/json body")
                for media, entry in content.items():
                    if entry.get("schema") != ERROR_REF:
                        problems.append(f"{method.upper()} {path} {code} {media}: {entry.get('schema')} is not the Error component")
    assert operations >= 20 and {p.split("/")[1] for p in schema["paths"]} == {"api", "arena"}
    assert not problems, "\n".join(problems)


def _assert_error_shape(response, status: int, code: str, *, with_errors: bool = False) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == ({"detail", "code", "errors"} if with_errors else {"detail", "code"}), body
    assert isinstance(body["detail"], str) and body["detail"].strip() and body["code"] == code
    if with_errors:
        assert isinstance(body["errors"], dict) and body["errors"]


@pytest.mark.django_db
def test_annotation_api_errors_have_the_one_shape(client):
    from tests.factories import AnnotatorFactory

    _assert_error_shape(client.post("/api/studies/any/next/"), 403, "not_authenticated")
    client.force_login(AnnotatorFactory(username="shape-annotator"))
    _assert_error_shape(client.post("/api/studies/no-such-study/next/"), 404, "not_found")
    _assert_error_shape(client.post("/api/assignments/1/judgment/", {}, content_type="application/json"), 400, "invalid", with_errors=True)
    _assert_error_shape(client.get("/api/studies/no-such-study/export/"), 403, "permission_denied")


@pytest.mark.django_db
def test_arena_api_errors_have_the_one_shape(client):
    _assert_error_shape(client.post("/arena/api/battles/", {"prompt": "calm piano"}, content_type="application/json"), 403, "terms_required")
    _assert_error_shape(client.post("/arena/api/terms/", {}, content_type="application/json"), 400, "invalid", with_errors=True)
    _assert_error_shape(client.post("/arena/api/terms/", {"accept": True, "version": "0"}, content_type="application/json"), 409, "terms_outdated")
    _assert_error_shape(client.get(f"/arena/api/battles/{uuid.uuid4()}/"), 404, "not_found")


@pytest.mark.django_db
def test_scoring_api_errors_have_the_one_shape(client):
    from tests.factories import AnnotatorFactory, UserFactory

    client.force_login(AnnotatorFactory(username="shape-annotator"))
    _assert_error_shape(client.get("/api/scoring/runs/"), 403, "permission_denied")
    client.force_login(UserFactory(username="shape-researcher", roles=["researcher"]))
    _assert_error_shape(client.post("/api/scoring/runs/", {}, content_type="application/json"), 400, "invalid", with_errors=True)
    _assert_error_shape(client.post("/api/scoring/runs/", {"judge": "nope", "study": "x"}, content_type="application/json"), 400, "unknown_judge")
    _assert_error_shape(client.get("/api/scoring/runs/999999/"), 404, "not_found")
    _assert_error_shape(client.get("/api/studies/no-such-study/report/"), 404, "not_found")


def test_no_template_carries_an_inline_event_handler():
    # The Content-Security-Policy refuses inline handlers: one in a template silently does nothing.
    import re

    root = Path(__file__).resolve().parents[2] / "templates"
    handler = re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE)
    found = [str(p.relative_to(root)) for p in root.rglob("*.html") if handler.search(p.read_text())]
    assert not found, f"inline event handlers in {found}"


# --- (d) the browser code --------------------------------------------------------------------

STATIC = ROOT / "static"


def _static_scripts() -> list[Path]:
    return sorted(STATIC.rglob("*.js"))


def test_one_file_under_static_opens_websockets():
    # Every live page goes through static/js/live.js: one reconnect policy and one polling fallback.
    scripts = _static_scripts()
    openers = [str(p.relative_to(ROOT)) for p in scripts if "new WebSocket" in p.read_text()]
    assert len(scripts) > 10 and openers == ["static/js/live.js"], openers


def test_no_script_under_static_over_700_lines():
    over = [f"{p.relative_to(ROOT)}: {n} lines" for p in _static_scripts() if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not over, f"scripts over {MAX_LINES} lines: " + "; ".join(over)


def test_live_pages_load_the_live_client_before_their_own_script():
    import re

    templates = ROOT / "templates"
    for page, script in (("arena/leaderboard.html", "arena/leaderboard.js"), ("scoring/report.html", "scoring/report.js"), ("scoring/run.html", "scoring/run.js"), ("scoring/training.html", "scoring/training.js")):
        sources = re.findall(r"<script src=\"\{% static '([^']+)' %\}\"", (templates / page).read_text())
        assert "js/live.js" in sources and sources.index("js/live.js") < sources.index(script), (page, sources)


# --- (e) the tests -----------------------------------------------------------------------------

TESTS = ROOT / "tests"


def _test_module_imports(source: str) -> list[tuple[int, str]]:
    """(line, dotted name) of each import in the source that names a test module (last name `test_*`).

    Shared set-up lives in helper modules and conftest.py: a test file that imports another one
    runs that file's imports and fixtures too, and breaks when that file is renamed or split.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names = [base] if node.module else []
            names += [f"{base}.{alias.name}" if node.module else f"{base}{alias.name}" for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.rsplit(".", 1)[-1].startswith("test_")]
    return found


def test_the_test_import_check_sees_every_form():
    source = "import tests.a.test_x\nfrom tests.a.test_y import f\nfrom .test_z import g\nfrom . import test_w\nfrom tests.a import helpers\nimport tests.a.helpers\n"
    assert [name for _, name in _test_module_imports(source)] == ["tests.a.test_x", "tests.a.test_y", ".test_z", ".test_w"]


def test_no_test_file_imports_another_test_module():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {name}" for path in sorted(TESTS.rglob("*.py")) for line, name in _test_module_imports(path.read_text())]
    assert not offenders, "move what is shared into a helper module or conftest.py: " + "; ".join(offenders)


# --- (h) the engine split ----------------------------------------------------------------------


def test_every_test_that_depends_on_the_engine_carries_the_engine_marker():
    # CI's second run (PostgreSQL + Redis) runs `-m "engine or services"` only: a test the rule finds unmarked would
    # never meet the real engines.
    from tests import engine_rule

    shared = engine_rule.conftest_fixtures()
    unmarked = [f"{f.path.relative_to(ROOT)}::{f.test} ({f.reason})" for p in engine_rule.test_files() for f in engine_rule.findings(p, shared) if not f.marked]
    assert not unmarked, "mark these @pytest.mark.engine (python -m tests.engine_rule does it):\n" + "\n".join(unmarked)


@pytest.mark.engine
def test_the_engine_rule_sees_transactions_threads_servers_and_fixtures(tmp_path):
    from tests import engine_rule

    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import threading\nimport pytest\nfrom tests.live_uvicorn import serving\n\n"
        "@pytest.fixture\ndef busy(transactional_db):\n    return 1\n\n"
        "def test_plain(db):\n    '''Mentions PostgreSQL and select_for_update in prose only.'''\n    assert 1  # threading\n\n"
        "@pytest.mark.django_db(transaction=True)\ndef test_tx():\n    pass\n\n"
        "def test_thread():\n    threading.Thread(target=print).start()\n\n"
        "def test_server():\n    with serving():\n        pass\n\n"
        "def test_fixture(busy):\n    pass\n\n"
        "@pytest.mark.engine\ndef test_marked(busy):\n    pass\n\n"
        "class Pages(LiveServerTestCase):\n    def test_page(self):\n        pass\n\n"
        "class Phone(Pages):\n    def test_narrow(self):\n        pass\n"
    )
    found = {f.test: f.marked for f in engine_rule.findings(sample, set())}
    assert found == {"test_tx": False, "test_thread": False, "test_server": False, "test_fixture": False, "test_marked": True, "Pages.test_page": False, "Phone.test_narrow": False}
    assert engine_rule.mark_unmarked([sample]) == 6
    assert all(f.marked for f in engine_rule.findings(sample, set()))

"""The house rules: the parent side never imports torch; the runner never imports textual; no
two tuimon modules import each other, however indirectly; the two houses of the parent side (what
runs a session, what reads one) stay apart (docs/layout.md)."""

import ast
import subprocess
import sys
from pathlib import Path


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_parent_side_does_not_import_torch():
    loaded = modules_after(
        "import tuimon.cli, tuimon.headless, tuimon.control.supervisor, tuimon.report.export,"
        " tuimon.analysis.stats, tuimon.sessiondir.store, tuimon.events, tuimon.variants,"
        " tuimon.recipe; tuimon.cli.run_parser(); tuimon.cli.summary_parser()"
        "; import tuimon.cli.attach, tuimon.cli.ls, tuimon.cli.detached, tuimon.detach,"
        " tuimon.control.daemon, tuimon.envvars, tuimon.exit_codes, tuimon.ui.app, tuimon.cli.script,"
        " tuimon.cli.doctor")
    assert "torch" not in loaded
    # Every module of the split packages was imported (their __init__ re-exports them all).
    assert {"tuimon.analysis.stats.probes", "tuimon.control.stopping", "tuimon.cli.run",
            "tuimon.report.table", "tuimon.ui.app"} <= loaded


def test_runner_does_not_import_textual():
    loaded = modules_after("import tuimon.runner.__main__, tuimon.runner.loop, tuimon.runner.profiling,"
                           " tuimon.runner.script.hooks, tuimon.runner.script.steps,"
                           " tuimon.runner.script.compile_modes, tuimon.runner.torch_facts")
    assert "textual" not in loaded and "torch" in loaded
    assert {"tuimon.runner.profiling.analysis", "tuimon.runner.profiling.capture",
            "tuimon.runner.script.steps"} <= loaded


def test_help_is_fast_and_torch_free():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "tuimon", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "--modes" in proc.stdout and "summary" in proc.stdout
    assert " torch" not in proc.stderr  # importtime lists every module imported


# ---- no import circle among tuimon's modules --------------------------------------------------
TUIMON = Path(__file__).resolve().parent.parent / "tuimon"


def module_name(path: Path) -> str:
    parts = path.relative_to(TUIMON.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules an import statement may name (relative imports resolved): for ``from P
    import x``, both P and P.x (x may be a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def import_graph() -> dict[str, set[str]]:
    """Module -> the tuimon modules it imports, at any depth of its code (a function-level
    import closes a circle as well). Importing ``a.b.c`` from outside ``a.b`` runs ``a.b``'s
    ``__init__`` first, so that package counts too; a package importing its own modules does
    not make a circle."""
    files = {module_name(p): p for p in TUIMON.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in imported(node, name, path.name == "__init__.py"):
                if target in files:
                    deps.update({target, *ancestors(target)} - {*ancestors(name), name})
        graph[name] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    graph = import_graph()
    assert "tuimon.runner.profiling.capture" in graph and "tuimon.cli.run" in graph  # it sees them
    assert circles(graph) == []


def test_each_side_imports_only_the_shared_side():
    """The runner (child side) and the rest (parent side) share only modules that import
    neither: events, envvars, recipe, failures, ... (a constant both need goes there)."""
    graph = import_graph()
    parent_only = ("tuimon.ui", "tuimon.control", "tuimon.analysis", "tuimon.report", "tuimon.sessiondir",
                   "tuimon.probes", "tuimon.cli", "tuimon.headless",
                   "tuimon.detach")
    crossings = sorted(
        (m, d) for m, deps in graph.items() for d in deps
        if (m.startswith("tuimon.runner") and d.startswith(parent_only))
        or (d.startswith("tuimon.runner") and not m.startswith("tuimon.runner")))
    assert crossings == []
    for leaf in ("tuimon.events", "tuimon.envvars", "tuimon.exit_codes"):
        assert graph[leaf] == set(), leaf


# ---- the two houses: control/ runs a session, analysis/ reads one ---------------------------------
def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _imports(path: Path) -> list[tuple[ast.AST, str]]:
    """(node, module name) for every import in a file, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node, node.module or ""))
    return out


def _files(package: str) -> dict[str, Path]:
    return {module_name(p): p for p in TUIMON.rglob("*.py") if _under(module_name(p), package)}


def test_analysis_reads_only_the_floor():
    """The reading house imports neither the running house nor any view of it: only the session
    directory, the shared leaves and itself."""
    graph = import_graph()
    assert "tuimon.analysis.stats.verdict" in graph
    allowed = ("tuimon.analysis", "tuimon.sessiondir", "tuimon.events", "tuimon.fmt", "tuimon.axes",
               "tuimon.failures", "tuimon.variants", "tuimon.probes.alerts", "tuimon")
    wrong = sorted((m, d) for m, deps in graph.items() if _under(m, "tuimon.analysis")
                   for d in deps if not (_under(d, *allowed[:-1]) or d == "tuimon"))
    assert wrong == []


def test_analysis_never_starts_a_process_nor_opens_a_socket():
    """Pure functions of events: no process, thread, signal or socket module, no os.fork/kill/system."""
    forbidden = {"subprocess", "socket", "multiprocessing", "threading", "signal", "psutil", "asyncio",
                 "selectors", "select", "http", "urllib", "concurrent"}
    calls = {"fork", "kill", "system", "popen", "spawnv", "spawnl", "execv", "execl", "killpg", "forkpty"}
    found = []
    for name, path in _files("tuimon.analysis").items():
        found += [(name, mod) for _, mod in _imports(path) if mod.split(".")[0] in forbidden]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_os = isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "os"
            if is_os and (node.attr in calls or node.attr.startswith(("spawn", "exec"))):
                found.append((name, f"os.{node.attr}"))
    assert len(_files("tuimon.analysis")) > 20 and found == []


def test_the_floor_and_the_reports_stand_apart_from_the_control_side():
    graph = import_graph()
    wrong = sorted((m, d) for m, deps in graph.items() for d in deps
                   if (_under(m, "tuimon.sessiondir") and _under(d, "tuimon.analysis", "tuimon.control",
                                                                 "tuimon.report", "tuimon.ui", "tuimon.cli"))
                   or (_under(m, "tuimon.report") and _under(d, "tuimon.control", "tuimon.ui", "tuimon.cli",
                                                             "tuimon.probes")))
    assert wrong == []


def test_others_ask_analysis_only_through_its_public_names():
    """Control, reports, the TUI, the headless view, the CLI: ``from tuimon.analysis import X``
    with X in its ``__all__``, never one of its modules."""
    public = set(ast.literal_eval(next(
        n.value for n in ast.parse((TUIMON / "analysis" / "__init__.py").read_text()).body
        if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")))
    wrong = []
    for path in TUIMON.rglob("*.py"):
        name = module_name(path)
        if _under(name, "tuimon.analysis"):
            continue
        for node, mod in _imports(path):
            if not _under(mod, "tuimon.analysis"):
                continue
            if mod != "tuimon.analysis" or isinstance(node, ast.Import):
                wrong.append((name, mod))
            else:
                wrong += [(name, a.name) for a in node.names if a.name not in public]
    assert wrong == []


def test_views_never_recompute_a_statistic():
    """The TUI, the headless view, the reports and the browser side lay out what analysis computed:
    none of them imports a statistics library."""
    found = [(module_name(p), mod) for pkg in ("tuimon.ui", "tuimon.report", "tuimon.web")
             for p in _files(pkg).values() for _, mod in _imports(p)
             if mod.split(".")[0] in ("statistics", "numpy", "scipy")]
    found += [("tuimon.headless", mod) for _, mod in _imports(TUIMON / "headless.py")
              if mod.split(".")[0] in ("statistics", "numpy", "scipy")]
    assert found == []

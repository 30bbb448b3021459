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


def test_the_ui_and_the_command_line_start_without_matplotlib():
    """matplotlib (tuimon report's figures, ~0.3 s to import) is loaded only when a report is
    drawn: never by the CLI, the TUI (its export key asks a child process), the web side or the
    exporters."""
    loaded = modules_after(
        "import tuimon.cli, tuimon.ui.app, tuimon.ui.report_export, tuimon.report.export,"
        " tuimon.web.tab, tuimon.cli.report, tuimon.headless; tuimon.cli.run_parser()"
        "; import tuimon.cli.report as r; r.report_parser()")
    assert "tuimon.ui.app" in loaded and "tuimon.cli.report" in loaded
    assert not any(m == "matplotlib" or m.startswith("matplotlib.") for m in loaded)
    # ... and the report's own package does load it, when it draws (the check can fail), and no torch
    drawing = modules_after("import tuimon.report.html.page, tuimon.report.html.canvas as c; c.figure(1.0)")
    assert "matplotlib" in drawing and "torch" not in drawing


def test_runner_does_not_import_textual():
    loaded = modules_after("import tuimon.runner.__main__, tuimon.runner.recipe_loop, tuimon.runner.engine,"
                           " tuimon.runner.profiling, tuimon.runner.script.hooks, tuimon.runner.script.steps,"
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
TUIMON = Path(__file__).resolve().parents[2] / "tuimon"


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
               "tuimon.failures", "tuimon.variants", "tuimon.fixes", "tuimon.probes.alerts", "tuimon.peaks",
               "tuimon")
    wrong = sorted((m, d) for m, deps in graph.items() if _under(m, "tuimon.analysis")
                   for d in deps if not (_under(d, *allowed[:-1]) or d == "tuimon"))
    assert wrong == []


def test_one_reducer_stands_on_the_floor_and_every_reader_uses_it():
    """sessiondir/run_state.py (with job_steps.py) is what the events say of each run, for both
    houses: it imports events.py alone (no torch, no textual, nothing above the floor), and the
    supervisor, the statistics, the TUI and headless mode read runs from it."""
    graph = import_graph()
    assert graph["tuimon.sessiondir.run_state"] == {"tuimon.events", "tuimon.sessiondir.job_steps"}
    assert graph["tuimon.sessiondir.job_steps"] == {"tuimon.events"}
    readers = ("tuimon.control.supervisor", "tuimon.control.runs", "tuimon.analysis.stats.collect",
               "tuimon.ui.model", "tuimon.headless")
    assert [m for m in readers if "tuimon.sessiondir.run_state" not in graph[m]] == []
    loaded = modules_after("import tuimon.sessiondir.run_state")
    assert not {"torch", "textual", "tuimon.analysis", "tuimon.control"} & loaded


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


def test_web_never_imports_the_command_line():
    """The browser side stands beside the TUI, below the command line: cli/serve.py starts it,
    it never reaches back up (a tab opens its session as attach does, through ui/sources.py)."""
    graph = import_graph()
    assert "tuimon.web.tab" in graph
    wrong = sorted((m, d) for m, deps in graph.items() if _under(m, "tuimon.web")
                   for d in deps if _under(d, "tuimon.cli"))
    assert wrong == []


# ---- one settings contract: a run's defaults are written once, in tuimon/settings.py ------------
# Names that stand for a run setting outside the record (a flag's dest, a parameter) -> the
# settings constant that holds its default.
RUN_DEFAULTS = {"mode": "MODE", "precision": "PRECISION", "seed": "SEED", "device": "DEVICE",
                "warmup": "WARMUP", "turn": "TURN_S", "turn_s": "TURN_S", "repeats": "AUTO_REPEATS",
                "profile_window": "PROFILE_WINDOW", "window": "PROFILE_WINDOW",
                "profile_backward": "PROFILE_BACKWARD", "no_step_s": "NO_STEP_S"}


def _literal(node: ast.AST):
    """The value of a literal default (a constant, or a tuple / list of constants); None else."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None


def run_default_copies(root: Path) -> list[tuple[str, str]]:
    """(module, what) for every run default written outside tuimon/settings.py under ``root``:
    a module constant named as a settings constant with its value; a parameter, class field or
    argparse flag named as a run setting whose literal default is that setting's; the profile
    window's numbers anywhere; an argparse parser in the runner."""
    import dataclasses

    from tuimon import settings

    constants = {k: v for k, v in vars(settings).items() if k.isupper() and not k.startswith("_")}
    defaults = {name: constants[const] for name, const in RUN_DEFAULTS.items()}
    for kind in (settings.RunSettings, *settings.GROUPS.values()):
        for f in dataclasses.fields(kind):
            if f.name not in settings.GROUPS and f.default not in (None, False, 0, "", ()):
                defaults.setdefault(f.name, f.default)
    window = settings.PROFILE_WINDOW
    found = []
    for path in root.rglob("*.py"):
        name = module_name(path) if root == TUIMON else str(path.relative_to(root))
        if path.name == "settings.py" and path.parent == root:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if "runner" in path.parts and path.name == "__main__.py" or "script" in path.parts:
            found += [(name, f"import {mod}") for _, mod in _imports(path) if mod == "argparse"]
        for node in tree.body:  # module constants
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = getattr(node.targets[0], "id", None)
                if target in constants and _literal(node.value) == constants[target]:
                    found.append((name, f"{target} = {ast.unparse(node.value)}"))
        for node in ast.walk(tree):
            pairs = []  # (the name a default is given to, the default's node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = [*args.posonlyargs, *args.args]
                named = [a.arg for a in positional[len(positional) - len(args.defaults):]]
                pairs += list(zip(named, args.defaults, strict=True))
                pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                          if d is not None]
            elif isinstance(node, ast.ClassDef):
                pairs += [(n.target.id, n.value) for n in node.body if isinstance(n, ast.AnnAssign)
                          and isinstance(n.target, ast.Name) and n.value is not None]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                dest = str(node.args[0].value).lstrip("-").replace("-", "_")
                pairs += [(dest, k.value) for k in node.keywords if k.arg == "default"]
            elif isinstance(node, ast.Constant) and node.value == window_text(window):
                found.append((name, repr(node.value)))
            elif isinstance(node, ast.Tuple) and _literal(node) == window:
                found.append((name, ast.unparse(node)))
            found += [(name, f"{key}={ast.unparse(value)}") for key, value in pairs
                      if key in defaults and _literal(value) is not None
                      and _literal(value) in (defaults[key], _text(defaults[key]))]
    return sorted(set(found))


def window_text(window: tuple[int, ...]) -> str:
    return ",".join(map(str, window))


def _text(value):
    """A tuple of numbers as a flag writes it ("1,2,3"); anything else as it is."""
    return window_text(value) if isinstance(value, tuple) else value


def test_no_module_but_the_settings_defines_a_run_default():
    """Each default of a run is written once, in tuimon/settings.py: the CLI's flags, the plan,
    the supervisor, the recipe runner and the script hooks take it from there."""
    assert run_default_copies(TUIMON) == []


def test_the_default_check_finds_a_copy(tmp_path):
    """The check can fail: a flag with its own default, a constant copied, the window's numbers."""
    (tmp_path / "flags.py").write_text(
        'NO_STEP_S = 60.0\n'
        'def parser(p):\n'
        '    p.add_argument("--profile-window", default="1,2,3")\n'
        '    p.add_argument("--seed", type=int, default=0)\n'
        'def start(steps, warmup="auto"):\n'
        '    return (1, 2, 3)\n')
    found = {what for _, what in run_default_copies(tmp_path)}
    assert found == {"NO_STEP_S = 60.0", "profile_window='1,2,3'", "'1,2,3'", "warmup='auto'",
                     "seed=0", "(1, 2, 3)"}


# ---- the walk: one setting from the command line to the child (docs/development.md) ----------
def room_of(module: str) -> str:
    """A module's room: its top-level package or module under tuimon."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tuimon"


def room_floors() -> dict[str, int]:
    """Each room's floor: one above the highest room it imports (the leaves: 0)."""
    rooms: dict[str, set[str]] = {}
    for m, deps in import_graph().items():
        rooms.setdefault(room_of(m), set()).update(room_of(d) for d in deps if d != "tuimon")
    for r, deps in rooms.items():
        deps.discard(r)
        deps.discard("tuimon")
    assert circles(rooms) == []  # no arrow runs back up between rooms (web/ -> cli/ did)
    floors: dict[str, int] = {}

    def floor(r: str) -> int:
        if r not in floors:
            floors[r] = 1 + max((floor(d) for d in rooms[r]), default=-1)
        return floors[r]

    for r in rooms:
        floor(r)
    return floors


def walks(text: str) -> dict[str, list[str]]:
    """The walks written in docs/development.md: title -> its rooms in order."""
    found: dict[str, list[str]] = {}
    title = None
    for line in text.splitlines():
        if line.startswith("    walk: "):
            title = line[len("    walk: "):].split("  ")[0]
            found[title] = []
        elif title is not None and line.startswith("      ") and not line.startswith("       "):
            found[title].append(line.split()[0])
        elif title is not None and not line.startswith("       "):
            title = None
    return found


def test_the_walk_from_the_command_line_to_the_child_climbs_back_up_at_most_3_times():
    floors = room_floors()
    written = walks((TUIMON.parent / "docs" / "development.md").read_text(encoding="utf-8"))
    assert {"a recipe's --steps 300", "a script's --steps 300", "a recipe's --profile-window 0,1,2",
            "a script's --profile-window 0,1,2"} <= set(written)
    for title, rooms in written.items():
        assert rooms[0] == "cli" and rooms[-1] == "runner", title
        assert set(rooms) <= set(floors), (title, set(rooms) - set(floors))
        climbs = sum(floors[b] > floors[a] for a, b in zip(rooms, rooms[1:], strict=False))
        assert climbs <= 3, (title, [(r, floors[r]) for r in rooms])


# ---- the supervisor by composition (control/) ---------------------------------------------------
def fields_of(cls: ast.ClassDef) -> set[str]:
    """A class's fields: its annotated names, and every ``self.X = ...`` in its methods."""
    names = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, ast.Attribute) and getattr(e.value, "id", None) == "self":
                    names.add(e.attr)
    return names


def composition_faults(files: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(module, where, what) for a mixin, a reach into another object's private name, or a class
    of more than 40 fields."""
    found = []
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                found += [(name, node.name, f"base {b}") for b in bases
                          if not (b == "Child" or b.endswith(("Error", "Exception")))]
                if len(fields := fields_of(node)) > 40:
                    found.append((name, node.name, f"{len(fields)} fields"))
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") \
                    and getattr(node.value, "id", None) not in ("self", "cls", "os", "sys"):
                found.append((name, ast.unparse(node), "another's private name"))
    return found


def test_the_supervisor_is_composed_of_objects_that_keep_to_their_own_names():
    """control/: no mixin (a class's only bases are Exception types, or Child for a job's child,
    which extends it); no object reads or writes another's private names (``x._y`` only on
    self or cls); no class over 40 fields."""
    files = _files("tuimon.control")
    assert {"tuimon.control.supervisor", "tuimon.control.stopping"} <= set(files)
    assert composition_faults(files) == []


# ---- deciding apart from wording: analysis/ returns decisions, report/ words them ----------------
# Strings in analysis/ that are torch's words, kept as data (matched against its messages, or kept
# in summary.json as the reason a frame ran eager): (module, constant).
TORCH_TEXT = {("tuimon.analysis.stats.compiles", "NO_OP")}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def sentences(path: Path, name: str) -> list[tuple[str, int, str]]:
    """(module, line, text) for every user-facing sentence in a module: a string (or an f-string's
    literal parts) of four words or more that is not a docstring, a regular expression or torch's
    words kept as data."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("compile", "search", "match"):
            skip.update(id(a) for a in node.args)  # re.compile(...): torch's text to match
        if isinstance(node, ast.Assign) and any((name, getattr(t, "id", None)) in TORCH_TEXT
                                                for t in node.targets):
            skip.add(id(node.value))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            skip.update(id(v) for v in node.values)
        else:
            continue
        if len(text.split()) >= 4:
            found.append((name, node.lineno, text[:60]))
    return found


def test_analysis_holds_no_user_facing_sentence():
    """The statistics, the verdict and the Why rules return decisions (a Point: a code and its
    figures); every sentence a user reads is written in report/ (verdict_text, trust_text,
    why_words/, ...), so the TUI, headless mode and the exporters share it, and no rule can read
    another's words."""
    assert [s for name, p in _files("tuimon.analysis").items() for s in sentences(p, name)] == []


def test_the_sentence_check_finds_one(tmp_path):
    path = tmp_path / "rule.py"
    path.write_text('"""A docstring of many words is fine."""\nimport re\n'
                    'PAT = re.compile(r"size mismatch at index (\\d+)")\n'
                    'def rule(x):\n    return {"why": f"the machine was busy: {x} cores"}\n')
    assert [line for _, line, _ in sentences(path, "rule")] == [5]


def thresholds(path: Path, name: str) -> list[tuple[str, int, str]]:
    """(module, line, code) for every comparison of a figure against a bound: a number other than
    0 or ±1, or an upper-case constant (LOSS_TOLERANCE, WIDE, ...). A text's own length is layout,
    not a decision (``len(reason) <= 90``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare) or not any(
                isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in node.ops):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(s, ast.Call) and getattr(s.func, "id", None) == "len" for s in sides):
            continue
        bound = any(isinstance(s, ast.Constant) and isinstance(s.value, (int, float))
                    and not isinstance(s.value, bool) and s.value not in (0, 1, -1) for s in sides)
        bound |= any(isinstance(s, ast.Name) and s.id.isupper() and len(s.id) > 1 for s in sides)
        if bound:
            found.append((name, node.lineno, ast.unparse(node)))
    return found


def test_report_decides_nothing():
    """report/ (and the headless view) word what analysis decided: none of them holds a figure
    against a bound (which is better, what is noise, what is busy are analysis/'s)."""
    files = {**_files("tuimon.report"), "tuimon.headless": TUIMON / "headless.py"}
    assert [t for name, p in files.items() for t in thresholds(p, name)] == []


def test_the_decision_check_finds_one(tmp_path):
    path = tmp_path / "words.py"
    path.write_text("WIDE = 2.0\ndef words(r, text):\n    if len(text) > 90:\n        text = text[:90]\n"
                    "    if r.hi / r.lo > WIDE:\n        return 'cannot tell'\n"
                    "    return 'faster' if r.speedup > 1.05 else text\n")
    assert [line for _, line, _ in thresholds(path, "words")] == [5, 7]


# What a surface may test a text for: its own row's name, a traceback's header, a key's action,
# a device's name, a CSS class, a blank cell; never the words another module wrote.
OWN_TEXT = {("tuimon.report.table", "compile / warm-up time"), ("tuimon.report.table", "Fatal Python error"),
            ("tuimon.ui.keys", "focus_"), ("tuimon.ui.widgets.why_pane", "cuda"),
            ("tuimon.ui.widgets.overlay", "probe-"), ("tuimon.ui.widgets.chart_draw", " ")}


def words_read(path: Path, name: str) -> list[tuple[str, int, str]]:
    """(module, line, text) for every text a module tests another text against: a
    ``startswith``/``endswith``, or an ==, != or ``in`` with a phrase."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("startswith", "endswith"):
            found += [(name, node.lineno, a.value) for a in node.args
                      if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                   for op in node.ops):
            found += [(name, node.lineno, s.value) for s in (node.left, *node.comparators)
                      if isinstance(s, ast.Constant) and isinstance(s.value, str) and " " in s.value]
    return found


def test_no_surface_reads_another_modules_words():
    """Words built once (issue 41): report/ builds one document of typed lines; summary.md, the
    page, the terminal and the TUI pick and style its lines by kind and figures. None of them
    decides by another's text (the rank strip's colour once read ``startswith("straggler")``)."""
    files = {**_files("tuimon.report"), **_files("tuimon.ui"), **_files("tuimon.web"),
             "tuimon.headless": TUIMON / "headless.py"}
    found = [w for name, p in files.items() for w in words_read(p, name)]
    assert len(found) >= len(OWN_TEXT) and [w for w in found if w[::2] not in OWN_TEXT] == []


def test_the_words_check_finds_one(tmp_path):
    path = tmp_path / "strip.py"
    path.write_text('def style(part, line):\n    if part.startswith("straggler"):\n        return 1\n'
                    '    return ", slower" in line\n')
    assert [line for _, line, _ in words_read(path, "strip")] == [2, 4]


def test_every_why_code_has_its_words():
    """A Why rule returns codes; report/why_words/ holds one entry a code. Every code written in
    analysis/why/ (a literal "<family>.<what>", and the recompile kinds' f"recompiles.{kind}") has
    its words, so no finding reaches a reader as a KeyError or a bare code."""
    import re

    from tuimon.analysis.why.recompiles import kind_of
    from tuimon.report.why_words import WORDS

    families = {code.split(".")[0] for code in WORDS}
    written = {c for p in _files("tuimon.analysis.why").values()
               for c in re.findall(r"\"([a-z_]+\.[a-z_]+)\"", p.read_text(encoding="utf-8"))}
    written = {c for c in written if c.split(".")[0] in families}
    kinds = {kind_of(r) for r in ("size mismatch at index 0", "id(x) == 1", "x == 3", "grad_mode")}
    assert len(written) > 100 and kinds == {"shapes", "object", "value", "other"}
    assert sorted((written | {f"recompiles.{k}" for k in kinds}) - set(WORDS)) == []


# ---- records of a size one can read (tuimon/) ---------------------------------------------------
MAX_FIELDS = 40


def big_records(files: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(module, class, fields) for each class, dataclass or not, with more than MAX_FIELDS
    annotated names of its own (a dataclass's fields)."""
    found = []
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                n = sum(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) for s in node.body)
                if n > MAX_FIELDS:
                    found.append((name, node.name, n))
    return found


def test_no_record_has_more_than_40_fields():
    """A run's statistics are small records composed (analysis/stats/records.py), not one record
    that every statistics module fills."""
    files = _files("tuimon")
    assert "tuimon.analysis.stats.records" in files
    assert big_records(files) == []


def test_the_field_count_finds_a_big_record(tmp_path):
    fields = "\n".join(f"    f{k}: int = 0" for k in range(MAX_FIELDS + 1))
    # A method's own annotated names are not the class's fields.
    (tmp_path / "big.py").write_text(f"from dataclasses import dataclass\n\n\n@dataclass\nclass Big:\n"
                                     f"{fields}\n    def method(self) -> int:\n        x: int = 1\n"
                                     "        return x\n")
    (tmp_path / "small.py").write_text("class Small:\n" + "\n".join(fields.splitlines()[:MAX_FIELDS]) + "\n")
    assert big_records({"big": tmp_path / "big.py", "small": tmp_path / "small.py"}) == \
        [("big", "Big", MAX_FIELDS + 1)]

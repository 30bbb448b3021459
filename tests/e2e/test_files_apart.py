"""Each variant of a script writes only into its own place (issue 24): the user's directory is
left as it was, every run's outputs are kept under the session per run and listed in the
summary, relative reads still work, and what cannot be kept apart is named.

The mirror and the routing of paths first, in this process; then the wrappers in a bare Python
process; then real scripts through the real CLI (tests/scripts/save_reload.py,
tests/scripts/resume.py, copied into a project directory as a user has them)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SCRIPTS
from test_end_to_end import runs_of

from tuimon.control import files
from tuimon.envvars import PEAK_CACHE
from tuimon.runner.script.files import KEEP, MAKE, READ, TRUNC, FilesApart

PY = sys.executable


def tree(top: Path) -> dict[str, str]:
    """Every file under ``top`` (symlinks not followed) -> its sha256."""
    out = {}
    for path in sorted(top.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def project(tmp_path):
    """A user's project: a checkpoint, a log, data, a config; a sibling data directory."""
    proj = tmp_path / "proj"
    (proj / "checkpoints").mkdir(parents=True)
    (proj / "checkpoints" / "checkpoint.pt").write_bytes(b"the user's checkpoint")
    (proj / "train.log").write_text("an earlier run\n")
    (proj / "data").mkdir()
    (proj / "data" / "train.txt").write_text("some data\n")
    (tmp_path / "shared-data").mkdir()
    (tmp_path / "shared-data" / "x.txt").write_text("beside\n")
    return proj


def mirrored(tmp_path: Path, proj: Path, run: str = "r1") -> tuple[str, str]:
    session = tmp_path / "sessions" / "s"
    session.mkdir(parents=True)
    root = files.mirror_root(session, run)
    cwd = files.build(root, str(proj.resolve()), files.hidden(session, str(proj.resolve())))
    return root, cwd


def test_the_mirror_reads_through_and_hides_the_sessions(tmp_path, project):
    session = project / "tuimon-sessions" / "s"
    session.mkdir(parents=True)
    root = files.mirror_root(session, "r1")
    cwd = files.build(root, str(project.resolve()), files.hidden(session, str(project.resolve())))
    assert cwd == root + str(project.resolve())
    assert os.path.islink(os.path.join(cwd, "train.log")) and not os.path.islink(cwd)
    assert Path(cwd, "data", "train.txt").read_text() == "some data\n"
    # Every ancestor is mirrored: ../shared-data reads what it always read.
    assert Path(cwd, "..", "shared-data", "x.txt").read_text() == "beside\n"
    assert not os.path.lexists(os.path.join(cwd, "tuimon-sessions"))  # --out is not in the view


def test_route_keeps_every_write_in_the_mirror(tmp_path, project, monkeypatch):
    before = tree(project)
    root, cwd = mirrored(tmp_path, project)
    outside = []
    fa = FilesApart({"root": root, "apart": [str(project.resolve())], "hide": [],
                     "exempt": [str(tmp_path / "sessions")]}, lambda p, e: outside.append((p, e)))
    monkeypatch.chdir(cwd)
    # A truncating write: the link goes, the user's file stays.
    assert fa.route("train.log", TRUNC) == "train.log"
    assert not os.path.lexists("train.log")
    # An append keeps the old content, in a copy of its own.
    fa.route(Path("checkpoints/checkpoint.pt"), KEEP)
    assert os.path.isdir("checkpoints") and not os.path.islink("checkpoints")
    assert not os.path.islink("checkpoints/checkpoint.pt")
    assert Path("checkpoints/checkpoint.pt").read_bytes() == b"the user's checkpoint"
    # A new file in a directory seen through a link: the directory becomes the run's own.
    fa.route("data/cache.bin", TRUNC)
    assert not os.path.islink("data") and os.path.islink("data/train.txt")
    # The project's directory named by its absolute path: the same place in the mirror.
    absolute = str(project.resolve() / "data" / "train.txt")
    assert fa.route(absolute, READ) == root + absolute
    assert fa.route(absolute, TRUNC) == root + absolute and not os.path.lexists(root + absolute)
    # Reads change nothing.
    assert fa.route("train.log", READ) == "train.log"
    assert tree(project) == before
    # Outside: named once, with whether it was there; a file made exclusively is the run's own.
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_bytes(b"x")
    assert fa.route(str(elsewhere), TRUNC) == str(elsewhere)
    fa.route(str(elsewhere), TRUNC)
    fa.route(str(tmp_path / "new.pt"), KEEP)
    fa.route(str(tmp_path / "excl.pt"), MAKE)
    fa.route(str(tmp_path / "sessions" / "s" / "events.jsonl"), TRUNC)  # tuimon's own
    fa.route("/dev/null", TRUNC)
    assert outside == [(str(elsewhere), True), (str(tmp_path / "new.pt"), False)]



def test_a_cache_and_a_working_directory_inside_one_another_the_deeper_wins(tmp_path, project,
                                                                            monkeypatch):
    """A cache (XDG, Inductor's, the peaks') is tuimon's or shared, and left alone; a working
    directory is kept apart. When one lies inside the other, the deeper one says which: the
    measured peaks' file in the working directory once made every write there land in the
    user's directory (tests/e2e/test_scripts.py's checkpoint did)."""
    root, _ = mirrored(tmp_path, project)
    proj = str(project.resolve())
    monkeypatch.setenv(PEAK_CACHE, os.path.join(proj, "peaks.json"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the project lies inside the cache
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", os.path.join(proj, "inductor"))
    fa = FilesApart({"root": root, "apart": [proj], "hide": [], "exempt": []}, lambda p, e: None)
    assert fa.place(os.path.join(proj, "model.pt")) == "apart"
    assert fa.place(os.path.join(proj, "peaks.json")) == "exempt"
    assert fa.place(os.path.join(proj, "peaks.json.lock")) == "exempt"
    assert fa.place(os.path.join(proj, "inductor", "fxgraph", "x")) == "exempt"
    assert fa.place(str(tmp_path / "elsewhere" / "x")) == "exempt"  # the cache, beside it
    assert fa.route(os.path.join(proj, "model.pt"), TRUNC) == root + os.path.join(proj, "model.pt")

WRAPPED = r"""
import json, os, shutil, sys, tempfile
from pathlib import Path
from tuimon.runner.script.files import FilesApart
said = []
FilesApart(json.loads(sys.argv[1]), lambda p, e: said.append([p, e])).install()
open("train.log", "a").write("mine\n")
Path("checkpoints/checkpoint.pt").write_bytes(b"mine")
os.makedirs("runs/exp", exist_ok=True)
Path("runs/exp/m.json").write_text("{}")
os.replace("train.log", "old.log")
os.remove("data/train.txt")
shutil.rmtree("data")
os.mkdir("data")
fd = os.open("notes.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"n")
os.close(fd)
with tempfile.TemporaryDirectory() as d:
    open(os.path.join(d, "scratch"), "w").write("x")
with tempfile.TemporaryFile() as f:  # O_TMPFILE on Linux: a file without a name
    f.write(b"x")
open(sys.argv[2], "w").write("outside")
print(json.dumps(said))
"""


def test_the_wrapped_calls_leave_the_users_files_alone(tmp_path, project):
    before = tree(project)
    root, cwd = mirrored(tmp_path, project)
    settings = {"root": root, "apart": [str(project.resolve())], "hide": [], "exempt": []}
    out = subprocess.run([PY, "-c", WRAPPED, json.dumps(settings), str(tmp_path / "out.txt")],
                         cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert tree(project) == before and not (project / "runs").exists()
    assert json.loads(out.stdout) == [[str(tmp_path / "out.txt"), False]]  # the temp dir: its own
    assert Path(cwd, "old.log").read_text() == "an earlier run\nmine\n"
    assert Path(cwd, "checkpoints", "checkpoint.pt").read_bytes() == b"mine"
    assert Path(cwd, "runs", "exp", "m.json").read_text() == "{}"
    assert Path(cwd, "data").is_dir() and not os.listdir(Path(cwd, "data"))  # its data, removed
    listed = files.outputs(root, str(project.resolve()))
    assert {f["path"] for f in listed["files"]} == {"old.log", "notes.txt",
                                                      "checkpoints/checkpoint.pt", "runs/exp/m.json"}


def test_the_snapshot_names_what_changed(tmp_path, project):
    dirs, hide = [str(project)], set()
    before = files.snapshot(dirs, hide)
    (project / "train.log").write_text("changed\n")
    (project / "data" / "new.txt").write_text("new\n")
    (project / "checkpoints" / "checkpoint.pt").unlink()
    (project / "__pycache__").mkdir()  # Python's own bookkeeping is not watched
    assert files.changes(before, files.snapshot(dirs, hide)) == [
        {"path": str(project / "checkpoints" / "checkpoint.pt"), "change": "removed"},
        {"path": str(project / "data" / "new.txt"), "change": "added"},
        {"path": str(project / "train.log"), "change": "changed"}]


def test_a_path_two_runs_wrote_is_named_with_what_was_there_first():
    from tuimon import events
    from tuimon.analysis import summarize

    evs = [events.make(events.RUN_QUEUED, run, mode=mode, precision="script")
           for run, mode in (("eager-script", "eager"), ("default-script", "default"))]
    evs += [{"type": "file_written", "run": "default-script", "t": 2.0, "path": "/x.pt", "existed": True},
            {"type": "file_written", "run": "eager-script", "t": 1.0, "path": "/x.pt", "existed": False},
            {"type": "file_written", "run": "eager-script", "t": 3.0, "path": "/y.pt", "existed": True}]
    files_ = summarize(evs).files
    # The second writer found the first one's file: it was not there before the session.
    assert files_["outside"] == [
        {"path": "/x.pt", "runs": ["default/script", "eager/script"], "existed": False, "shared": True},
        {"path": "/y.pt", "runs": ["eager/script"], "existed": True, "shared": False}]
    assert summarize(evs[:2]).files is None  # a session without files kept apart says nothing


# ---- real scripts through the CLI -----------------------------------------------------------------
def run_in(tuimon, project: Path, name: str, *args: str, script_args=(), **kwargs):
    shutil.copy(SCRIPTS / name, project / "train.py")
    proc, session = tuimon("run", "--headless", *args, "--", PY, "train.py", *script_args,
                           cwd=project, **kwargs)
    assert proc.returncode == 0, proc.stderr
    return proc, session


def saved_pid(path: Path) -> int:
    import torch

    return torch.load(path, weights_only=False)["pid"]


def test_a_script_that_saves_and_reloads_model_pt(tuimon, project):
    before = tree(project)
    proc, session = run_in(tuimon, project, "save_reload.py", "--modes", "eager,default",
                           "--steps", "20", "--turn-steps", "5")
    assert not (project / "model.pt").exists()  # nothing lands in the user's directory
    assert tree(project) == {**before, "train.py": tree(project)["train.py"]}
    _, runs = runs_of(session)
    summary = json.loads((session / "summary.json").read_text())
    outputs = {o["run"]: o for o in summary["files"]["outputs"]}
    assert set(outputs) == {"eager-script", "default-script"}
    for run, kinds in runs.items():
        pid = kinds["run_started"][0]["pid"]
        own = Path(outputs[run]["dir"]) / "model.pt"
        assert saved_pid(own) == pid  # each variant's own checkpoint, in its own place
        assert [f["path"] for f in outputs[run]["files"]] == ["model.pt"]
        log = (session / "logs" / f"{run}.log").read_text()
        assert "Exiting from training early" in log
        assert "saved by this process" in log, log  # its final test ran on its own model
    md = (session / "summary.md").read_text()
    assert "## Files" in md and "`model.pt`" in md and "your directory: unchanged" in md
    assert "files: eager/script: 1 file(s)" in proc.stdout


def test_a_checkpoint_that_was_there_before_the_session(tuimon, project):
    import torch

    ckpt = project / "checkpoints" / "checkpoint.pt"
    torch.save({"model": torch.nn.Linear(8, 1).state_dict(), "epoch": 7, "pid": 0}, ckpt)
    before = tree(project)
    # Two processes (--repeats 2): round 1 runs the 24 steps (6 epochs of 4 steps), round 2 12
    # (3 epochs). --out
    # relative to the user's directory: what tuimon hands a run is absolute all the same
    # (the profiler's trace lands in the session, not in the run's own directory).
    _, session = run_in(tuimon, project, "resume.py", "--modes", "eager", "--repeats", "2",
                        "--steps", "24", "--out", "../sessions", "--profile-at", "1",
                        "--profile-window", "0,0,1")
    assert tree(project) == {**before, "train.py": tree(project)["train.py"]}  # byte-identical
    assert len(list((session / "profiles").glob("*.json"))) == 2
    evs, runs = runs_of(session)
    rounds = {e["run"]: e["replicate"] for e in evs if e["type"] == "run_queued"}
    summary = json.loads((session / "summary.json").read_text())
    outputs = {o["run"]: o for o in summary["files"]["outputs"]}
    assert len(runs) == 2 and set(outputs) == set(runs)
    for run, kinds in runs.items():
        last = 12 if rounds[run] == 1 else 9  # resumed at epoch 7: 6 epochs, or 3
        log = (session / "logs" / f"{run}.log").read_text()
        assert "resumed from epoch 7" in log  # the user's checkpoint, not the other run's
        here = Path(outputs[run]["dir"])
        state = torch.load(here / "checkpoints" / "checkpoint.pt")
        assert state["epoch"] == last and state["pid"] == kinds["run_started"][0]["pid"]
        assert (here / "train.log").read_text().startswith("an earlier run\nepoch 8 ")
        assert {f["path"] for f in outputs[run]["files"]} == {
            "checkpoints/checkpoint.pt", "train.log", "runs/exp/metrics.json"}
    assert summary["files"]["changed"] == 0 and summary["files"]["outside"] == []


def test_a_write_outside_the_working_directory_is_named(tuimon, project, tmp_path):
    shared = tmp_path / "exports" / "weights.pt"
    shared.parent.mkdir()
    shared.write_bytes(b"an export from before")
    (project / "notes.txt").write_text("notes\n")
    proc, session = run_in(tuimon, project, "resume.py", "--modes", "eager", "--repeats", "2",
                           "--steps", "16", script_args=("--ckpt", "ckpt.pt", "--export", str(shared),
                                                         "--shell-log", "notes.txt"))
    summary = json.loads((session / "summary.json").read_text())
    (written,) = summary["files"]["outside"]
    assert written == {"path": str(shared), "runs": ["eager/script #1", "eager/script #2"],
                       "existed": True, "shared": True}
    # A shell's write goes through the view to the user's file: the snapshot names it.
    assert summary["files"]["changes"] == [{"path": "notes.txt", "change": "changed"}]
    md = (session / "summary.md").read_text()
    assert f"**not kept apart**: `{shared}` written by eager/script #1 and eager/script #2 " \
           "(it existed before the session)" in md
    assert "`notes.txt` (changed)" in md
    assert f"not kept apart: {shared} written by" in proc.stdout
    # The terminal says summary.md's sentence, its marks dropped (one sentence a fact since issue 41)
    assert ("changed in your directory during the session (by a process tuimon's hooks do not see, "
            "or by someone else): notes.txt (changed)") in proc.stdout


def test_in_place_runs_in_the_users_directory(tuimon, project):
    _, session = run_in(tuimon, project, "resume.py", "--modes", "eager", "--steps", "6",
                        "--in-place", script_args=("--ckpt", "ckpt.pt"))
    assert (project / "runs" / "exp" / "metrics.json").is_file() and (project / "ckpt.pt").is_file()
    assert "epoch 0" in (project / "train.log").read_text()
    assert not (session / "files").exists()
    assert json.loads((session / "summary.json").read_text())["files"] is None


def test_a_torchrun_jobs_ranks_share_their_variants_place(tuimon, project):
    before = tree(project)
    shutil.copy(SCRIPTS / "ddp_train.py", project / "train.py")
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--steps", "40", "--", PY, "-m",
                           "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "train.py", "--ckpt", "ddp.pt", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert tree(project) == {**before, "train.py": tree(project)["train.py"]}
    (outputs,) = json.loads((session / "summary.json").read_text())["files"]["outputs"]
    assert [f["path"] for f in outputs["files"]] == ["ddp.pt"]  # rank 0's, in the job's place
    assert "rank 1: cleanup done" in (session / "logs" / "eager-script.log").read_text()


TEMP_TO_CHILD = '''
import os, subprocess, sys, tempfile
import torch

d = tempfile.mkdtemp()  # as Inductor's header build: a child process works in it
subprocess.run([sys.executable, "-c", f"open({os.path.join(d, 'x')!r}, 'w').write('a child wrote')"],
               check=True)
print("dir:", open(os.path.join(d, "x")).read(), flush=True)
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("mine")
print("file:", subprocess.run(["cat", f.name], capture_output=True, text=True, check=True).stdout, flush=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(8):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
with open("ckpt.txt", "w") as f:  # a fixed name: still the variant's own
    f.write(str(os.getpid()))
'''


def test_a_temp_directory_kept_apart_still_hands_real_paths_to_children(tuimon, project):
    """The temp directory inside a directory kept apart (a script in /tmp, or TMPDIR under the
    project): tempfile's fresh names stay real, so a child process handed one finds it (a
    compiled variant's Inductor failed to build its header in a mkdtemp() it could not see)."""
    (project / "tmp").mkdir()
    (project / "train.py").write_text(TEMP_TO_CHILD)
    before = tree(project)
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--repeats", "2", "--", PY,
                           "train.py", cwd=project, env={"TMPDIR": str(project / "tmp")})
    assert proc.returncode == 0, proc.stderr
    for run in ("eager-script", "eager-script-2"):
        log = (session / "logs" / f"{run}.log").read_text()
        assert "dir: a child wrote" in log and "file: mine" in log, log
    after = tree(project)
    assert {k: v for k, v in after.items() if not k.startswith("tmp/")} == before  # theirs untouched
    assert "ckpt.txt" not in after

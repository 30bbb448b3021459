"""Screenshots for README, made from the real app: .venv/bin/python screenshots/make_screenshots.py

- main-80x24 / main-120x32 / main-160x45: the TUI replaying tests/data/session_tiny_mlp (a
  recorded session);
- compile-pane-120x40: the compile pane (key c) of tiny_mlp with a deliberate graph break;
- profiler-pane-140x50: two real captures (key p on each panel), eager fp32 beside amp;
- live-120x32 / overlay-120x32 / done-120x32: a real tiny_mlp session (eager vs default, in
  parallel) mid-run, the same moment in the overlay (key o), then at its end with the
  comparison strip;
- repeats-120x32: a real interleaved tiny_mlp session with --repeats 3, in its last round: the
  panels show the third processes, the strip the speedup combined over the rounds.
- script-120x32: `tuimon run -- python tests/scripts/plain_loop.py`, an unmodified script
  (DataLoader workers, a validation pass each epoch), eager vs default, interleaved.
- ranks-2-120x32 / rank-view-2-80x24: `tuimon run -- torchrun --nproc-per-node 2
  tests/scripts/ddp_train.py --slow-rank 1`, a DDP script whose rank 1 loads its data slower,
  eager vs default: the panels' rank strips, then the rank view (key k) at 80x24;
- ranks-8-120x32 / rank-view-8-80x24: `tuimon recipes/tiny_mlp.py --nproc 8` (8 ranks of a tiny
  model under DDP on this 2-core machine), its panel and its rank view at 80x24.
- fsdp-2-120x32 / fsdp-view-2-80x24: `tuimon run -- torchrun --nproc-per-node 2
  tests/scripts/fsdp_train.py --compile block`, FSDP2 with the script's per-block compiles, eager
  vs default: the panels, then the rank view with each rank's all-gather / reduce-scatter time.
- gpu-main-160x45 / gpu-live-120x32 / gpu-overlay-120x32 (`--only gpu`, on a GPU: the GPU
  programme's stage extras, bench/gpu/): a real session of `--recipe` (swin_t), eager vs default
  in `--precision` (amp), interleaved, on `--device` (cuda): the panels with their GPU rows, then
  the overlay (key o) with GPU util; `--sessions DIR` keeps the session, `--max-wait` bounds the
  wait for both runs to be steady, `--one` makes the first shot only.
- try-strip-120x32 / try-summary-120 (`--only tried`): `tuimon try` for real on
  tests/recipes/blocks.py (8 repeated blocks): a session (eager vs default, 300 steps), then
  `tuimon try SESSION --only regional`; the TUI replaying the try session (the strip: the verdict,
  then the fix's line in summary.md's words) and the top of its summary.md as a terminal renders
  it (rich's Markdown); `--session DIR` shoots an existing try session instead.
`--only NAME` makes one of them (replay, compile_pane, live, profiler_pane, repeats, script,
ranks2, ranks8, gpu, tried); `--dest DIR` writes them elsewhere than screenshots/.
Each SVG is also rendered to PNG with rsvg-convert (xml:space="preserve" keeps the spaces that
rsvg would otherwise drop between differently styled runs of text).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tuimon.cli.script import check_command  # noqa: E402
from tuimon.settings import Program, RunSettings  # noqa: E402
from tuimon.ui.app import TuimonApp  # noqa: E402
from tuimon.ui.sources import LiveSource, ReplaySource  # noqa: E402


def program_of(command: list[str]) -> Program:
    """A script's Program as `tuimon run -- CMD` builds it (cli/script.py), run in place of a
    mirror of the current directory."""
    found = check_command(command)
    return Program(command=tuple(command), script=found["script"], name=found["name"], cwd=str(ROOT),
                   launcher=found.get("launcher"), nproc=found.get("nproc"), nnodes=found.get("nnodes"))


def to_png(svg: Path) -> None:
    text = svg.read_text(encoding="utf-8").replace("<svg ", '<svg xml:space="preserve" ', 1)
    svg.write_text(text, encoding="utf-8")
    if shutil.which("rsvg-convert"):
        with tempfile.NamedTemporaryFile("w", suffix=".svg", encoding="utf-8") as f:
            f.write(one_cell_glyphs(text))
            f.flush()
            subprocess.run(["rsvg-convert", f.name, "-o", str(svg.with_suffix(".png"))], check=True)
    else:
        print("rsvg-convert not found (apt-get install librsvg2-bin): SVG only")


TEXT = re.compile(r'(<text [^>]*?x=")([\d.]+)("[^>]*?textLength=")([\d.]+)("[^>]*>)([^<]*)(</text>)')
GLYPH = re.compile(r"&#?\w+;|.")
WIDE = re.compile("[\u2500-\u28ff]")  # box drawing, blocks, shapes, braille


def one_cell_glyphs(svg: str) -> str:
    """For the PNG only: the charts' braille and shapes come from a fallback font wider than the
    terminal's cell, and rsvg-convert ignores textLength, so a line of them overflows its chart.
    Each such text run is split into one element per character, each at its own cell."""

    def split(m: re.Match) -> str:
        head, x, mid, length, tail, content, end = m.groups()
        glyphs = GLYPH.findall(content)
        if not WIDE.search(content) or not glyphs:
            return m.group(0)
        cell = float(length) / len(glyphs)
        return "".join(f"{head}{float(x) + k * cell:.1f}{mid}{cell:.1f}{tail}{g}{end}"
                       for k, g in enumerate(glyphs))

    return TEXT.sub(split, svg)


async def settle(app, pilot, seconds: float) -> None:
    for _ in range(int(seconds / 0.25)):
        await pilot.pause(0.25)
        app.tick()
    await pilot.pause(0.3)


async def replay(tmp: Path) -> None:
    session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", tmp / "session_tiny_mlp"))
    for w, h in ((80, 24), (120, 32), (160, 45)):
        app = TuimonApp(ReplaySource(session, follow=False))
        async with app.run_test(size=(w, h)) as pilot:
            await settle(app, pilot, 2)
            shoot(app, f"main-{w}x{h}")


async def live(tmp: Path) -> None:
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import product

    store = SessionStore.create(tmp, "tiny_mlp")
    plan = Plan(RunSettings.make(recipe=str(ROOT / "recipes/tiny_mlp.py"), steps=40000, device="cpu"),
                product(["eager", "default"], ["fp32"]), "parallel", cache_dir=tmp / "cache", interval=0.5)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))
    async with app.run_test(size=(120, 32)) as pilot:
        runs = app.model.runs
        while not (len(runs) == 2 and all(r.state == "steady" and r.steps > 1500
                                          for r in runs.values())):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 3)
        shoot(app, "live-120x32")
        await pilot.press("o")  # every run on one chart: the compiled line starts late
        await settle(app, pilot, 1)
        shoot(app, "overlay-120x32")
        await pilot.press("o")
        while any(r.active for r in runs.values()):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 1)
        shoot(app, "done-120x32")
        app.source.close()


async def compile_pane(tmp: Path) -> None:
    out = tmp / "compiled"
    subprocess.run([sys.executable, "-m", "tuimon", str(ROOT / "recipes/tiny_mlp.py"), "--headless",
                    "--modes", "eager,default", "--steps", "2000", "--set", "graph_break=1",
                    "--out", str(out)], check=True, capture_output=True)
    session = next(out.iterdir())
    app = TuimonApp(ReplaySource(session, follow=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot, 1.5)
        await pilot.press("right", "c")
        await settle(app, pilot, 0.5)
        shoot(app, "compile-pane-120x40")


async def profiler_pane(tmp: Path) -> None:
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import product

    store = SessionStore.create(tmp, "profiled")
    plan = Plan(RunSettings.make(recipe=str(ROOT / "recipes/tiny_mlp.py"), steps=100000, device="cpu"),
                product(["eager"], ["fp32", "amp"]), "parallel", cache_dir=tmp / "cache", interval=0.5)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))
    async with app.run_test(size=(140, 50)) as pilot:
        runs = app.model.runs
        while not (len(runs) == 2 and all(r.steps > 300 for r in runs.values())):
            await settle(app, pilot, 0.5)
        await pilot.press("b", "p", "right", "p")
        while not all(r.profiles for r in runs.values()):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 1)
        shoot(app, "profiler-pane-140x50")
        app.source.close()


async def repeats(tmp: Path) -> None:
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import product

    store = SessionStore.create(tmp, "repeats")
    plan = Plan(RunSettings.make(recipe=str(ROOT / "recipes/tiny_mlp.py"), steps=3000, device="cpu",
                                 repeats=3),
                product(["eager", "default"], ["fp32"]), "interleave", cache_dir=tmp / "cache", interval=0.5)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))
    async with app.run_test(size=(120, 32)) as pilot:
        runs = app.model.runs
        while not all(r.steps > 1500 for r in runs.values() if r.replicate == 3) or len(runs) < 6:
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 1)
        shoot(app, "repeats-120x32")
        app.source.close()


async def script(tmp: Path) -> None:
    """`tuimon run -- python tests/scripts/plain_loop.py`: an unmodified script, eager vs default
    (tuimon compiles its model), interleaved, with its validation passes kept apart."""
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import SCRIPT, product

    command = [sys.executable, str(ROOT / "tests/scripts/plain_loop.py"), "--workers", "2",
               "--epochs", "1000"]
    store = SessionStore.create(tmp, "plain_loop")
    plan = Plan(RunSettings.make(program=program_of(command), steps=6000, warmup="1"),
                product(["eager", "default"], [SCRIPT]), "interleave",
                cache_dir=tmp / "cache", interval=0.5, turn_s=1.0)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))
    async with app.run_test(size=(120, 32)) as pilot:
        runs = app.model.runs
        while not (len(runs) == 2 and all(r.steps > 1500 for r in runs.values())):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 1)
        shoot(app, "script-120x32")
        app.source.close()


async def ranks2(tmp: Path) -> None:
    """A 2-rank DDP script under torchrun, rank 1 slower: eager vs default, interleaved."""
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import SCRIPT, product

    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
               "2", str(ROOT / "tests/scripts/ddp_train.py"), "--slow-rank", "1", "--slow-ms", "0.3",
               "--epochs", "1000"]
    store = SessionStore.create(tmp, "ddp_train")
    plan = Plan(RunSettings.make(program=program_of(command), steps=100000, warmup="1"),
                product(["eager", "default"], [SCRIPT]), "interleave",
                cache_dir=tmp / "cache", interval=0.5, turn_s=1.5)
    await job_shots(Supervisor(store, plan), 2, 600)


async def ranks8(tmp: Path) -> None:
    """tiny_mlp as 8 ranks under DDP (--nproc 8), eager: one job of 8 ranks on 2 cores."""
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import product

    store = SessionStore.create(tmp, "tiny_mlp")
    plan = Plan(RunSettings.make(recipe=str(ROOT / "recipes/tiny_mlp.py"), steps=100000, device="cpu",
                                 launcher="torchrun", nproc=8),
                product(["eager"], ["fp32"]), "sequential", cache_dir=tmp / "cache", interval=0.5)
    await job_shots(Supervisor(store, plan), 8, 300)


async def fsdp(tmp: Path) -> None:
    """An FSDP2 script under torchrun, 2 ranks, compiling its 4 blocks: eager vs default, the
    rank view with each rank's all-gather and reduce-scatter time."""
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import SCRIPT, product

    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
               "2", str(ROOT / "tests/scripts/fsdp_train.py"), "--compile", "block", "--steps", "100000"]
    store = SessionStore.create(tmp, "fsdp_train")
    plan = Plan(RunSettings.make(program=program_of(command), steps=100000, warmup="1"),
                product(["eager", "default"], [SCRIPT]), "interleave",
                cache_dir=tmp / "cache", interval=0.5, turn_s=1.5)
    await job_shots(Supervisor(store, plan), 2, 120, name="fsdp")


async def job_shots(supervisor, world: int, steps: int, name: str = "ranks") -> None:
    """The panels at 120x32 once every job's ranks have ``steps`` steps, then the first job's
    rank view at 80x24."""
    app = TuimonApp(LiveSource(supervisor))
    async with app.run_test(size=(120, 32)) as pilot:
        runs = app.model.runs
        while not (runs and all(len(r.ranks) == world and min(x.steps for x in r.ranks.values()) > steps
                                for r in runs.values())):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 1)
        shoot(app, f"{name}-{world}-120x32")
        await pilot.resize_terminal(80, 24)
        await pilot.press("k")
        await settle(app, pilot, 1.5)
        shoot(app, f"{'rank-view' if name == 'ranks' else name + '-view'}-{world}-80x24")
        app.source.close()


async def gpu(tmp: Path) -> None:
    """A real GPU session: the panels with their GPU rows (160x45, 120x32), the overlay (o)."""
    from tuimon.control.supervisor import Plan, Supervisor
    from tuimon.sessiondir.store import SessionStore
    from tuimon.variants import product

    out = Path(OPTS.sessions) if OPTS.sessions else tmp
    out.mkdir(parents=True, exist_ok=True)
    recipe = Path(OPTS.recipe).resolve()
    store = SessionStore.create(out, recipe.stem)
    plan = Plan(RunSettings.make(recipe=str(recipe), steps=1000000, device=OPTS.device, repeats=1),
                product(["eager", "default"], [OPTS.precision]), "interleave", cache_dir=tmp / "cache",
                interval=0.5)
    app = TuimonApp(LiveSource(Supervisor(store, plan)))
    deadline = time.monotonic() + OPTS.max_wait
    async with app.run_test(size=(160, 45)) as pilot:
        runs = app.model.runs
        while time.monotonic() < deadline and not (
                len(runs) == 2 and all(r.state == "steady" and r.steps > 200 for r in runs.values())):
            await settle(app, pilot, 0.5)
        await settle(app, pilot, 3)
        shoot(app, "gpu-main-160x45")
        if OPTS.one:  # the GPU programme's essential stage: one shot, its time for the rest
            app.source.close()
            return
        await pilot.resize_terminal(120, 32)
        await settle(app, pilot, 1)
        shoot(app, "gpu-live-120x32")
        await pilot.press("o")  # every run on one chart, GPU util below
        await settle(app, pilot, 1.5)
        shoot(app, "gpu-overlay-120x32")
        app.source.close()


async def tried(tmp: Path) -> None:
    session = Path(OPTS.session) if OPTS.session else try_session(tmp / "try")
    app = TuimonApp(ReplaySource(session, follow=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot, 2)
        shoot(app, "try-strip-120x32")
    markdown_shot((session / "summary.md").read_text(encoding="utf-8"), "try-summary-120")


def try_session(out: Path) -> Path:
    """A session of blocks.py, then tuimon try on it (regional); the try session's directory."""
    first = [sys.executable, "-m", "tuimon", str(ROOT / "tests/recipes/blocks.py"), "--set", "depth=8",
             "--set", "width=64", "--modes", "eager,default", "--steps", "300", "--repeats", "1",
             "--headless", "--out", str(out)]
    subprocess.run(first, check=True, capture_output=True)
    (session,) = out.iterdir()
    subprocess.run([sys.executable, "-m", "tuimon", "try", str(session), "--only", "regional",
                    "--headless"], check=True, capture_output=True)
    return next(p for p in sorted(out.iterdir()) if p != session)


def markdown_shot(text: str, name: str) -> None:
    """summary.md's head (down to the table) as a terminal renders it: rich's Markdown, as SVG."""
    from rich.console import Console
    from rich.markdown import Markdown

    head = text.split("\n|", 1)[0]
    console = Console(record=True, width=120, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(Markdown(head))
    dest = Path(OPTS.dest)
    dest.mkdir(parents=True, exist_ok=True)
    console.save_svg(str(dest / f"{name}.svg"), title="summary.md")
    to_png(dest / f"{name}.svg")


def shoot(app, name: str) -> None:
    dest = Path(OPTS.dest)
    dest.mkdir(parents=True, exist_ok=True)
    app.save_screenshot(f"{name}.svg", str(dest))
    to_png(dest / f"{name}.svg")


MAKERS = ("replay", "compile_pane", "live", "profiler_pane", "repeats", "script", "ranks2", "ranks8", "fsdp",
          "gpu", "tried")


def options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Screenshots for README, made from the real app")
    p.add_argument("--only", choices=MAKERS, help="make this one only")
    p.add_argument("--replay-only", action="store_true", help="the replays only (no live session)")
    p.add_argument("--dest", default=str(HERE), help="where the SVGs (and PNGs) go")
    p.add_argument("--device", default="cuda", help="gpu: the device of its runs")
    p.add_argument("--recipe", default=str(ROOT / "recipes/swin_t.py"), help="gpu: the recipe")
    p.add_argument("--precision", default="amp", help="gpu: the precision of both variants")
    p.add_argument("--sessions", help="gpu: keep its session directory here")
    p.add_argument("--session", help="tried: shoot this try session (else one is made)")
    p.add_argument("--one", action="store_true", help="gpu: the first shot only (160x45)")
    p.add_argument("--max-wait", type=float, default=240.0,
                   help="gpu: seconds to wait for both runs to be steady before shooting")
    return p.parse_args(argv)


OPTS = options([])


async def main() -> None:
    makers = [replay, compile_pane]
    if not OPTS.replay_only:
        makers += [live, profiler_pane, repeats, script, ranks2, ranks8, fsdp, tried]
    if OPTS.only:
        makers = [globals()[OPTS.only]]
    with tempfile.TemporaryDirectory() as tmp:
        for make in makers:
            await make(Path(tmp))


if __name__ == "__main__":
    OPTS = options()
    asyncio.run(main())

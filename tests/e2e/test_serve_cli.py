"""``tuimon serve`` without a browser: bad input is one line and exit 2, the lines it prints
(the ssh -L line, the warning off loopback), another user of the machine refused, the kernel
tables read for that, every flag documented. The browser tests are in tests/e2e/test_serve.py."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import browser
import pytest
from conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]


def serve_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuimon", "serve", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", tmp_path / "s"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = {
            ("--port", str(port)): f"port {port} on 127.0.0.1 is already in use",
            ("--port", "70000"): "argument --port: must be between 0 and 65,535, got 70000",
            ("--host", "192.0.2.1"): "--host 192.0.2.1: not an address of this machine",
            ("--fps", "0"): "argument --fps: must be between 1 and 30",
        }
        for args, expected in cases.items():
            proc = serve_cli(str(session), *args, cwd=tmp_path)
            assert proc.returncode == 2 and proc.stdout == "", (args, proc)
            assert proc.stderr.count("\n") == 1 and expected in proc.stderr, (args, proc.stderr)
    (tmp_path / "empty").mkdir()
    for args, expected in {("--out", str(tmp_path / "empty")): "no tuimon session in",
                           ("--out", str(tmp_path / "nope")): "no such directory",
                           (str(tmp_path / "empty"),): "tuimon: error: "}.items():
        proc = serve_cli(*args, "--port", "0", cwd=tmp_path)
        assert proc.returncode == 2 and expected in proc.stderr and proc.stderr.count("\n") == 1, proc


def test_what_it_prints_and_the_warning_off_loopback(tmp_path, monkeypatch, capsys):
    """--host other than loopback warns (no authentication); the ssh line always reaches the
    server through the remote's loopback. Bound to nothing: the socket and the server are fakes
    (tests bind to 127.0.0.1 only)."""
    from tuimon.cli import serve as serve_cli_module
    from tuimon.web import server

    session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", tmp_path / "s"))
    ran = {}

    class FakeSocket:
        def __init__(self, ip: str) -> None:
            self.ip = ip

        def getsockname(self):
            return (self.ip, 8123)

    def fake_run(sock, command, title, name, say):
        ran.update(command=command, title=title)
        return 2, 0

    monkeypatch.setattr(server, "run", fake_run)
    for ip, warned, ssh in (("0.0.0.0", True, "ssh -L 8123:127.0.0.1:8123 "),
                            ("127.0.0.1", False, "ssh -L 8123:127.0.0.1:8123 "),
                            ("::", True, "ssh -L 8123:[::1]:8123 "),
                            ("10.1.2.3", True, "ssh -L 8123:10.1.2.3:8123 ")):
        monkeypatch.setattr(serve_cli_module, "bind", lambda host, port, ip=ip: FakeSocket(ip))
        args = serve_cli_module.serve_parser().parse_args([str(session), "--host", ip])
        assert serve_cli_module.serve_command(args) == 0
        out, err = capsys.readouterr()
        assert ("no authentication" in err) is warned, (ip, err)
        assert ssh in out and "stopped (2 tabs closed)" in out, out
    assert ran["title"] == "s · tuimon"
    assert "-m tuimon.web.tab" in ran["command"] and str(session.resolve()) in ran["command"]


def http_status(port: int, uid: int | None = None) -> int:
    """GET / on 127.0.0.1:port, as ``uid`` (a forked child that drops to it) or as us."""
    def get() -> int:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            return int(conn.recv(64).split()[1])

    if uid is None:
        return get()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to uid, ask, report the status through the pipe
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.write(write, str(get()).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return int(f.read() or 0)


def test_another_user_of_this_machine_is_refused(tmp_path):
    """127.0.0.1 keeps the network out, not the machine's other users: a loopback connection
    is answered only from our own uid (the owner of its socket, from /proc/net/tcp)."""
    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root")
    session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", tmp_path / "s"))
    server = browser.Served(str(session), cwd=tmp_path)
    try:
        assert http_status(server.port) == 200
        assert http_status(server.port, uid=65534) == 403  # nobody
        wait_for(lambda: "refused a connection from another user (uid 65534)" in server.output, 10,
                 "the refusal on the server's console")
        assert not server.tabs()
        assert server.ctrl_c() == 0
    finally:
        if server.proc.poll() is None:
            server.kill()


def test_peers_reads_the_kernel_tables(tmp_path):
    from tuimon.web import peers

    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
        "   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 1\n"
        "   1: 0100007F:A4A6 0100007F:1F40 01 00000000:00000000 00:00000000 00000000  1001 0 2\n")
    tcp6 = tmp_path / "tcp6"
    tcp6.write_text("  sl  local_address remote_address st tx rx tr retr uid\n"
                    "   0: 0000000000000000FFFF00000100007F:B000 0000000000000000FFFF00000100007F:1F40"
                    " 01 0:0 0:0 0 1002 0 3\n")
    tables = (str(table), str(tcp6))
    assert peers.owner(("127.0.0.1", 0xA4A6), ("127.0.0.1", 8000), tables) == 1001
    assert peers.owner(("::ffff:127.0.0.1", 0xB000, 0, 0), ("127.0.0.1", 8000), tables) == 1002
    assert peers.owner(("127.0.0.1", 1), ("127.0.0.1", 8000), tables) is None
    with pytest.raises(peers.Unknown):
        peers.owner(("127.0.0.1", 1), ("127.0.0.1", 8000), (str(tmp_path / "none"),))
    assert peers.is_loopback("127.0.0.1") and peers.is_loopback("::1")
    assert peers.is_loopback("::ffff:127.0.0.1") and not peers.is_loopback("0.0.0.0")


def test_every_serve_flag_is_in_commands_md():
    from tuimon.cli.serve import serve_parser

    text = (ROOT / "docs/commands.md").read_text(encoding="utf-8")
    section = text[text.index("## `tuimon serve"):]
    section = section[:section.index("\n## ")]
    flags = {opt for action in serve_parser()._actions for opt in action.option_strings
             if opt.startswith("--") and opt != "--help"}
    assert flags >= {"--port", "--host", "--out", "--fps"}
    assert [f for f in flags if f"`{f}" not in section] == []


def test_the_server_and_its_viewers_never_import_torch():
    code = ("import sys, tuimon.cli.serve, tuimon.web.server, tuimon.web.tab, tuimon.web.peers;"
            "import tuimon.cli.serve as s; s.serve_parser(); print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr

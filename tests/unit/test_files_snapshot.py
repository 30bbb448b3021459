"""The user's directories before and after a session (control/files.py): a symlinked directory
is its link, never what it holds (issue 40 rerun: an earlier session's mirror links /tmp, and
every session after it said "files/default-script/tmp (changed)" in the user's directory)."""

import os

from tuimon.control.files import changes, snapshot


def test_a_symlinked_directory_changes_only_when_its_link_does(tmp_path):
    target, home = tmp_path / "elsewhere", tmp_path / "home"
    target.mkdir()
    home.mkdir()
    os.symlink(target, home / "tmp")
    (home / "train.py").write_text("print()\n")
    before = snapshot([str(home)], set())
    (target / "new-file").write_text("x")  # what the linked directory holds changes
    os.utime(target, (1, 1))
    assert changes(before, snapshot([str(home)], set())) == []
    (home / "train.py").write_text("print(1)\n")  # a file of the user's does
    os.remove(home / "tmp")
    os.symlink(tmp_path, home / "tmp")  # and so does a link pointed elsewhere
    assert [c["path"].rsplit("/", 1)[1] for c in changes(before, snapshot([str(home)], set()))] == [
        "tmp", "train.py"]

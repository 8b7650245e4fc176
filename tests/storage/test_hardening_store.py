"""Hardening of what trnprof writes (issue 28): `check --repair` never deletes the only copy of a
run, and every file and folder follows the user's umask, so a group-writable share works for
several users at once."""

import importlib.abc
import importlib.machinery
import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from trnprof import atomic, open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.runstore import mark_owner

USER_A, USER_B, GROUP = 64101, 64102, 64100  # ids no account uses: set by the test itself


def test_repair_keeps_an_old_copy_beside_a_run_that_is_not_whole(tmp_path, cli):
    run = synthetic_run(tmp_path / "run", ranks=2, steps=2, ops_per_step=4)
    rows = open_run(run).sql("SELECT COUNT(*) AS n FROM events")["n"][0]
    aside = tmp_path / ".run.old-999999999-abcd1234"  # a --force commit moved it aside, then died
    run.rename(aside)
    mark_owner(aside, "old", pid=999999999, started=0.0)
    run.mkdir()  # and something left an empty folder in its place
    result = cli("check", run, "--repair")
    assert result.exit_code == 2 and aside.is_dir()
    assert f"kept {aside}" in result.stdout and f"rename {aside.name} to run" in result.stdout
    run.rmdir()  # as the line says
    aside.rename(run)
    assert cli("check", run).exit_code == 0
    assert open_run(run).sql("SELECT COUNT(*) AS n FROM events")["n"][0] == rows


def test_repair_removes_an_old_copy_beside_a_whole_run(tmp_path, cli):
    run = synthetic_run(tmp_path / "run", ranks=2, steps=2, ops_per_step=4)
    old = tmp_path / ".run.old-999999999-abcd1234"
    shutil.copytree(run, old)
    mark_owner(old, "old", pid=999999999, started=0.0)
    result = cli("check", run, "--repair")
    assert result.exit_code == 0 and not old.exists() and "removed .run.old-" in result.stdout


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077])
def test_written_files_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        written = atomic.write_text(tmp_path / "out" / "a.txt", "x")
        folder = atomic.temp_folder(tmp_path, ".f.")
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask


def test_a_failed_write_leaves_no_temporary_file_and_names_the_target(tmp_path, cli):
    target = tmp_path / "existing"
    target.mkdir()
    with pytest.raises(Exception, match=r"cannot write .*existing: it is a folder") as caught:
        atomic.write_text(target, "x")
    assert ".tmp" not in str(caught.value)
    assert [p.name for p in tmp_path.iterdir()] == ["existing"]


def _cli(*args) -> tuple[int, str]:
    from trnprof.cli import main  # in a child, the installed copy's (`_as_user`)

    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def _installed_copy() -> Path:
    """The trnprof package copied where every user can read it, as a system-wide install is: the
    checkout may sit in a folder other users cannot enter (a 0700 `mktemp -d`), and trnprof
    reads its rule packs, SQL and templates from its package folders while it runs. Subpackages
    an editable install keeps outside `trnprof/` (`collectors/`, `rules/`) go to their place:
    those imported so far, so copy after the commands ran once."""
    root = Path(tempfile.mkdtemp(prefix="trnprof-install-"))
    packages = {
        name: Path(list(module.__path__)[0])
        for name, module in list(sys.modules.items())
        if (name == "trnprof" or name.startswith("trnprof.")) and hasattr(module, "__path__")
    }
    for name, folder in sorted(packages.items()):  # trnprof first
        if name == "trnprof" or not folder.is_relative_to(packages["trnprof"]):
            target = root.joinpath(*name.split("."))
            shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return root


class _FromCopy(importlib.abc.MetaPathFinder):
    """trnprof's modules from `_installed_copy`, ahead of any other finder (an editable install's
    maps them to the checkout)."""

    def __init__(self, root: Path):
        self.root = root

    def find_spec(self, name, path=None, target=None):
        if name != "trnprof" and not name.startswith("trnprof."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, [str(self.root)] if name == "trnprof" else path)


def _home_of(uid: int) -> Path:
    """A home folder of `uid`'s own (its cache folder, its cache secret)."""
    home = Path(tempfile.mkdtemp(prefix=f"trnprof-home-{uid}-"))
    os.chown(home, uid, GROUP)
    return home


def _as_user(uid: int, work, installed: Path, home: Path) -> list:
    """`work()` in a forked child as `uid` (group GROUP, umask 002, its own `home`), trnprof
    imported afresh from `installed`: its JSON-able result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery from here on
        os.close(read)
        try:
            for name in [m for m in sys.modules if m == "trnprof" or m.startswith("trnprof.")]:
                del sys.modules[name]
            sys.meta_path.insert(0, _FromCopy(installed))
            os.setgroups([GROUP])
            os.setgid(GROUP)
            os.setuid(uid)
            os.umask(0o002)
            os.environ["HOME"] = str(home)
            result = work()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            result = [(-1, f"{type(exc).__name__}: {exc}")]
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return [tuple(r) for r in json.loads(data)]


def test_a_group_writable_share_works_for_two_users(cli):
    if os.geteuid() != 0:
        pytest.fail("this test switches between two uids: run it as root (CI does)")
    warm = synthetic_run(Path(tempfile.mkdtemp()) / "warm", ranks=2, steps=2, ops_per_step=4)
    try:  # the commands once as root: the children find every module they import already loaded
        for command in (["analyze", warm, "--format", "json"], ["report", warm, "-o", warm / "r.html"], ["info", warm]):
            assert cli(*command).exit_code == 0, command
    finally:
        shutil.rmtree(warm.parent)
    share = Path(tempfile.mkdtemp(prefix="trnprof-share-"))
    installed = _installed_copy()  # after the commands ran: their packages are imported
    homes = {uid: _home_of(uid) for uid in (USER_A, USER_B)}
    try:
        os.chmod(share, 0o755)
        os.chown(share, 0, GROUP)
        os.chmod(share, 0o2775)
        run = share / "run"

        def user_a():
            from trnprof.collectors.synthetic import synthetic_run

            synthetic_run(run, ranks=4, steps=3, ops_per_step=10, seed=1)
            return [_cli("analyze", run, "--format", "json")]

        a = _as_user(USER_A, user_a, installed, homes[USER_A])
        b = _as_user(
            USER_B,
            lambda: [
                _cli("analyze", run, "--format", "json"),
                _cli("report", run, "-o", share / "b.html"),
                _cli("info", run),
            ],
            installed,
            homes[USER_B],
        )
        assert [code for code, _ in a + b] == [0, 0, 0, 0], a + b
        assert json.loads(a[0][1])["findings"] == json.loads(b[0][1])["findings"]
        made = list((run / "derived").rglob("*")) + [share / "b.html"]
        shared = stat.S_IRGRP | stat.S_IWGRP
        assert [(p, oct(p.stat().st_mode)) for p in made if p.stat().st_mode & shared != shared] == []
        assert {p.stat().st_uid for p in made} == {USER_A, USER_B}
    finally:
        shutil.rmtree(share, ignore_errors=True)
        for folder in (installed, *homes.values()):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mask", [0o002, 0o027])
def test_reports_and_exports_follow_the_umask(tmp_path, cli, mask):
    run = synthetic_run(tmp_path / "run", ranks=2, steps=2, ops_per_step=4)
    old = os.umask(mask)
    try:
        assert cli("export", run, "--format", "chrome", "-o", tmp_path / "t.json").exit_code == 0
        assert cli("report", run, "-o", tmp_path / "r.html").exit_code == 0
    finally:
        os.umask(old)
    for name in ("t.json", "r.html"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]

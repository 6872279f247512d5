# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memo of facts about binaries (_binaries): a converged install neither hashes nor runs the
binaries again, and nothing it remembers outlives a change of the file it is about."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _exec
from ansible_collections.cnikit.cni.plugins.module_utils._binaries import MEMO_NAME, BinaryMemo, identity
from ansible_collections.cnikit.cni.plugins.module_utils._install import Options, ensure

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="installs root-owned binaries")


@pytest.fixture
def installed(tmp_path, fake):
    """Two test-double plugins installed from a directory; returns (install(), dest)."""
    for name in ("noop", "other"):
        fake.install(name)
    dest = tmp_path / "dest"

    def install() -> dict:
        return ensure(Options(dest=str(dest), src_dir=fake.directory, plugins=("noop", "other"), plugin_set="site"), None,
                      str(tmp_path), check_mode=False)

    assert install()["installed"] == ["noop", "other"]
    return install, dest


def _memo(dest: Path) -> dict:
    return json.loads((dest / MEMO_NAME).read_text())["binaries"]


def _log_versions_of(dest: Path, log: Path) -> None:
    """Make the installed copies of the test double log their calls."""
    for name in ("noop", "other"):
        (dest / f"{name}.debug.json").write_text(json.dumps({"log": str(log)}))


def test_an_install_remembers_digests_and_version_answers_of_what_it_installed_and_read(installed, fake):
    _install, dest = installed
    memo = _memo(dest)
    for name in ("noop", "other"):
        entry = memo[str(dest / name)]
        assert entry["identity"] == identity(str(dest / name))
        assert len(entry["sha256"]) == 64 and "1.1.0" in entry["cni_versions"]
    assert set(memo[os.path.join(fake.directory, "noop")]) == {"identity", "sha256"}


def test_a_converged_run_runs_no_binary(installed, tmp_path, fake):
    """In a new process, as every Ansible task is: only the memo can spare the VERSION calls."""
    _install, dest = installed
    log = tmp_path / "calls.jsonl"
    _log_versions_of(dest, log)
    rerun = (f"from ansible_collections.cnikit.cni.plugins.module_utils._install import Options, ensure\n"
             f"result = ensure(Options(dest={str(dest)!r}, src_dir={fake.directory!r}, plugins=('noop', 'other'), plugin_set='site'), "
             f"None, {str(tmp_path)!r}, check_mode=False)\n"
             "print(json.dumps(result['changed']), json.dumps(result['plugins']['noop']['cni_versions']))")
    done = subprocess.run([sys.executable, "-c", "import json\n" + rerun], capture_output=True, text=True,
                          check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    changed, versions = (json.loads(word) for word in done.stdout.split(" ", 1))
    assert changed is False and "1.1.0" in versions
    assert not log.exists()


def test_a_binary_rewritten_in_place_with_its_size_and_mtime_is_still_seen(installed):
    """ctime moves with every write and cannot be set back: a same-size rewrite with the old
    mtime restored is not taken for the installed binary."""
    install, dest = installed
    binary = dest / "noop"
    before = binary.stat()
    data = bytearray(binary.read_bytes())
    data[-2:] = b"#\n" if data[-2:] != b"#\n" else b"##"
    binary.write_bytes(bytes(data))
    os.utime(binary, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert binary.stat().st_size == before.st_size and binary.stat().st_mtime_ns == before.st_mtime_ns
    assert install()["updated"] == ["noop"]


def test_a_memo_others_may_write_is_not_believed(installed):
    install, dest = installed
    memo_file = dest / MEMO_NAME
    binary = dest / "noop"
    binary.write_bytes(binary.read_bytes() + b"\n# tampered\n")
    # Whoever could write the memo vouches for the tampered binary with the digest installed.
    forged = json.loads(memo_file.read_text())
    forged["binaries"][str(binary)]["identity"] = identity(str(binary))
    memo_file.write_text(json.dumps(forged))
    memo_file.chmod(0o666)
    assert install()["updated"] == ["noop"]


def test_the_executor_takes_the_remembered_version_answer_while_the_binary_is_unchanged(installed):
    _install, dest = installed
    binary = str(dest / "other")
    memo = BinaryMemo(str(dest))
    memo.put(binary, cni_versions=["0.4.0"])
    memo.save()
    executor = _exec.PluginExecutor([str(dest)])
    assert executor.supported_versions("other") == ["0.4.0"]
    os.chmod(binary, 0o750)  # moves the ctime: the memo no longer speaks for it
    assert "1.1.0" in executor.supported_versions("other")


def test_removing_the_last_plugin_removes_the_memo(installed, tmp_path):
    _install, dest = installed
    ensure(Options(dest=str(dest), state="absent", plugin_set="site"), None, str(tmp_path), check_mode=False)
    assert sorted(os.listdir(dest)) == []

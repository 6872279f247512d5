# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Host hygiene: files are created with the documented modes and owners whatever the umask
(conflists, cache, binaries, and the directories made for them), no shell ever sees user data,
and credentials in URLs never appear in a module's output."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import modules
import pytest
from conftest import PREFIX, needs_host, run
from fakeplugin import FakePlugins
from release_server import build_release, start_server

from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _cache
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey, cni_args_string

PLUGINS_SOURCE = Path(__file__).resolve().parents[2] / "plugins"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _owner(path: Path) -> tuple:
    info = path.stat()
    return info.st_uid, info.st_gid


@pytest.fixture
def hygiene_netns(request):
    needs_host()
    name = f"{PREFIX}hyg"
    run("ip", "netns", "add", name)
    request.addfinalizer(lambda: run("ip", "netns", "del", name, check=False))
    return name


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000], ids=["umask 022", "umask 077", "umask 000"])
def test_modes_and_owners_whatever_the_umask(tmp_path, hygiene_netns, umask):
    root = tmp_path / "host"
    conf_dir, cache_dir, dest = root / "etc/cni/net.d", root / "var/lib/cni", root / "opt/cni/bin"
    work = str(tmp_path / "moduletmp")
    common = {"conf_dir": str(conf_dir), "cni_path": ["/usr/lib/cni"]}
    results = [
        modules.run("cni_network", dict(common, name="hyg", plugins=[{"type": "loopback"}]), work, umask),
        modules.run("cni_attach", dict(common, cache_dir=str(cache_dir), network="hyg", netns=hygiene_netns,
                                       container_id="c1"), work, umask),
        modules.run("cni_plugin_install", {"src_dir": "/usr/lib/cni", "plugins": ["loopback"], "dest": str(dest)},
                    work, umask),
    ]
    assert not any(r.get("failed") for r in results), results

    expected_files = {
        conf_dir / "10-hyg.conflist": 0o644,
        cache_dir / "results" / "hyg-c1-eth0": 0o600,
        dest / "loopback": 0o755,
        dest / ".cnikit-manifest.json": 0o644,
        dest / ".cnikit-binaries.json": 0o644,
    }
    expected_dirs = {conf_dir: 0o755, cache_dir / "results": 0o700, dest: 0o755}
    for path, mode in list(expected_files.items()) + list(expected_dirs.items()):
        assert (oct(_mode(path)), _owner(path)) == (oct(mode), (0, 0)), path
    # The task tidied its lock files and their directory away; they exist while a verb holds them.
    assert not (cache_dir / _cache.LOCKS_SUBDIR).exists()
    old_umask = os.umask(umask)
    try:
        with _cache.ResultCache(str(cache_dir)).lock(AttachmentKey("hyg", "c1", "eth0")):
            locks = cache_dir / _cache.LOCKS_SUBDIR
            assert (oct(_mode(locks)), _owner(locks)) == (oct(0o700), (0, 0))
            assert {oct(_mode(lock)) for lock in locks.iterdir()} == {oct(0o600)}
    finally:
        os.umask(old_umask)
    # Nothing on the way to them is writable by others (a swapped directory would let a local
    # user replace plugins or conflists that root then runs or reads).
    for directory in [p for p in root.rglob("*") if p.is_dir()] + [root]:
        assert not _mode(directory) & 0o022, f"{directory} is {oct(_mode(directory))}"
    modules.run("cni_attach", dict(common, cache_dir=str(cache_dir), network="hyg", netns=hygiene_netns,
                                   container_id="c1", state="absent"), work, umask)


# -- no shell -----------------------------------------------------------------------------------

SHELL_PATTERNS = [r"shell\s*=\s*True", r"\bos\.system\(", r"\bos\.popen\(", r"use_unsafe_shell", r"\bsh\b\s*-c",
                  r"/bin/(ba)?sh\b", r"\bcommands\.getoutput", r"\bpty\.spawn"]


def test_no_shell_in_the_source():
    offenders = []
    for path in sorted(PLUGINS_SOURCE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(re.search(pattern, line) for pattern in SHELL_PATTERNS):
                offenders.append(f"{path.relative_to(PLUGINS_SOURCE)}:{number}: {line.strip()}")
    assert not offenders, offenders


HOSTILE = "$(touch /tmp/cnit-r-pwned);`touch /tmp/cnit-r-pwned`|touch /tmp/cnit-r-pwned"


def test_user_data_reaches_plugins_only_as_environment_and_stdin(tmp_path, monkeypatch):
    """Every process the engine starts is a plugin binary run without a shell; user data with
    shell syntax arrives intact in CNI_ARGS and the stdin config, and is never interpreted."""
    spawned = []
    real_popen = subprocess.Popen

    def recording_popen(argv, *args, **kwargs):
        spawned.append((argv, kwargs.get("shell", False), kwargs.get("executable")))
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    fakes = FakePlugins(tmp_path / "bin")
    fakes.install("main")
    netns = tmp_path / "netns"
    netns.write_text("")
    network = parse_network_list({"cniVersion": "1.0.0", "name": "hostile", "plugins": [
        {"type": "main", "capabilities": {"portMappings": True}, "note": HOSTILE}]})
    engine = Engine([fakes.directory], str(tmp_path / "cache"), timeout=20)
    args = [["K8S_POD_NAME", HOSTILE.replace(";", ",").replace("=", "-")]]
    item = Attachment("hostile", "c1", str(netns), "eth0", cni_args=args,
                      capability_args={"portMappings": [{"hostPort": 1, "containerPort": 2, "protocol": HOSTILE}]})

    _attach.converge(engine, _attach.Desired(lambda: network, item))
    _attach.converge(engine, _attach.Desired(lambda: network, item, state="absent"))

    assert spawned
    for argv, shell, executable in spawned:
        assert shell is False and executable is None
        assert isinstance(argv, list) and argv == [fakes.path("main")]
    add = fakes.calls("ADD")[0]
    assert add["env"]["CNI_ARGS"] == cni_args_string(args)
    assert add["stdin"]["note"] == HOSTILE
    assert add["stdin"]["runtimeConfig"]["portMappings"][0]["protocol"] == HOSTILE
    assert not os.path.exists("/tmp/cnit-r-pwned")


# -- no credentials in output ---------------------------------------------------------------------

SECRET = "s3cr3t-cnit-r"


@pytest.mark.parametrize("case", ["download succeeds", "tarball missing (HTTP 404)", "checksum URL with password",
                                  "url_password option"])
def test_credentials_never_appear_in_output(tmp_path, case):
    if os.geteuid() != 0:
        pytest.skip("installs with root ownership")
    root = str(tmp_path / "mirror")
    build_release(root, "1.1.1", "amd64", ["loopback"])
    server, base_url = start_server(root)
    authed = base_url.replace("http://", f"http://operator:{SECRET}@")
    args = {"version": "1.1.1", "arch": "amd64", "dest": str(tmp_path / "bin")}
    if case == "download succeeds":
        args["base_url"] = authed
    elif case.startswith("tarball missing"):
        args["url"] = f"{authed}/v9.9.9/missing.tgz"
    elif case.startswith("checksum URL"):
        args.update(base_url=base_url,
                    checksum=f"sha256:{authed}/v1.1.1/cni-plugins-linux-amd64-v1.1.1.tgz.sha256")
    else:
        args.update(base_url=base_url, url_username="operator", url_password=SECRET)
    try:
        done = subprocess.run(modules.command("cni_plugin_install", args, str(tmp_path / "moduletmp")),
                              capture_output=True, text=True, env=modules._env(), check=False)  # pylint: disable=protected-access
    finally:
        server.shutdown()
    result = json.loads(done.stdout)
    assert result.get("failed", False) is case.startswith("tarball missing"), result
    assert SECRET not in done.stdout + done.stderr

# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hostile state (issue 24): what someone who can write to the cache directory, a conf file, a
mirror or a plugin directory can plant there. Whatever the cache dir holds, the collection
never creates, truncates or deletes a file outside the directories it owns, and fails naming
the directory it will not use; hostile values are refused naming the option and the value."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import os
import resource
import ssl
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import modules
import pytest
from conftest import PREFIX, REAL_PLUGINS

from ansible_collections.cnikit.cni.plugins.module_utils import _cache, _conflist, _install, _network_file
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey, netns_path
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "utils"))
import release_server  # noqa: E402  pylint: disable=wrong-import-position,import-error

KEY = AttachmentKey("cnit-r-net", "c1", "eth0")
ENTRY = _cache.CacheEntry(KEY.network, KEY.container_id, KEY.ifname, config=b"{}", result={}, managed=True)
SUBDIRS = (_cache.RESULTS_SUBDIR, _cache.LOCKS_SUBDIR, _cache.PENDING_SUBDIR)


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("the collection runs as root; ownership checks need it")


@pytest.fixture
def cache_dir(tmp_path):
    needs_root()
    return str(tmp_path / "cache")


@pytest.fixture
def victim(tmp_path):
    """A directory of someone else's files: nothing of the collection may change them."""
    directory = tmp_path / "victim"
    directory.mkdir()
    for name in ("passwd", "network-cnit-r-net.lock", "attachment-001.lock", KEY.file_name):
        (directory / name).write_text(f"precious {name}\n")
    return directory


def snapshot(directory: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _warnings(result: dict) -> list:
    """The task's warnings as text (ansible-core 2.19 returns each as a structured event)."""
    return [json.dumps(w) if not isinstance(w, str) else w for w in result.get("warnings", [])]


def _hold(manager):
    with manager:
        pass


# Each operation of the cache that touches one of its directories.
OPERATIONS = {
    "lock": lambda cache: _hold(_cache.ResultCache(cache).lock(KEY)),
    "gc lock": lambda cache: _hold(_cache.ResultCache(cache).lock_for_gc(KEY.network)),
    "idle lock sweep": lambda cache: _cache.ResultCache(cache).tidy(),
    "write entry": lambda cache: _cache.ResultCache(cache).write(ENTRY),
    "read entry": lambda cache: _cache.ResultCache(cache).read(KEY),
    "delete entry": lambda cache: _cache.ResultCache(cache).delete(KEY),
    "list entries": lambda cache: _cache.ResultCache(cache).entries(),
    "mark pending": lambda cache: _cache.ResultCache(cache).mark_pending(KEY),
    "clear pending": lambda cache: _cache.ResultCache(cache).clear_pending(KEY),
    "is pending": lambda cache: _cache.ResultCache(cache).is_pending(KEY),
}
# The directory each operation uses (the sweep also walks cnikit-pending).
USES = {"lock": _cache.LOCKS_SUBDIR, "gc lock": _cache.LOCKS_SUBDIR, "idle lock sweep": _cache.LOCKS_SUBDIR,
        "write entry": _cache.RESULTS_SUBDIR, "read entry": _cache.RESULTS_SUBDIR,
        "delete entry": _cache.RESULTS_SUBDIR, "list entries": _cache.RESULTS_SUBDIR,
        "mark pending": _cache.PENDING_SUBDIR, "clear pending": _cache.PENDING_SUBDIR,
        "is pending": _cache.PENDING_SUBDIR}


# -- items 1 and 7: directories of the cache dir ------------------------------------------------

@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_symlinked_cache_subdirectory_is_refused_and_its_target_untouched(cache_dir, victim, operation):
    os.makedirs(cache_dir)
    subdir = os.path.join(cache_dir, USES[operation])
    os.symlink(victim, subdir)
    before = snapshot(victim)

    with pytest.raises(ConfigError) as caught:
        OPERATIONS[operation](cache_dir)

    assert caught.value.path == "cache_dir"
    assert subdir in caught.value.message and "symbolic link" in caught.value.message, caught.value.message
    assert snapshot(victim) == before


@pytest.mark.parametrize("damage", ["owned by another user", "group-writable", "world-writable"])
@pytest.mark.parametrize("subdir", SUBDIRS)
def test_a_cache_subdirectory_others_can_write_is_refused(cache_dir, subdir, damage):
    path = os.path.join(cache_dir, subdir)
    os.makedirs(path, mode=0o700)
    Path(path, "planted").write_text("theirs\n")
    if damage == "owned by another user":
        os.chown(path, 65534, 65534)
    else:
        os.chmod(path, 0o770 if damage == "group-writable" else 0o777)
    operation = next(name for name, used in USES.items() if used == subdir and name != "is pending")

    with pytest.raises(ConfigError) as caught:
        OPERATIONS[operation](cache_dir)

    assert caught.value.path == "cache_dir" and path in caught.value.message, caught.value.message
    assert Path(path, "planted").read_text() == "theirs\n"


@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_results_as_libcni_and_podman_make_it_are_used(cache_dir, mode):
    """libcni creates results/ 0700 (podman, containerd) and older runtimes 0755: both are ours to share."""
    os.makedirs(os.path.join(cache_dir, _cache.RESULTS_SUBDIR), mode=mode)
    os.chmod(os.path.join(cache_dir, _cache.RESULTS_SUBDIR), mode)
    OPERATIONS["write entry"](cache_dir)
    assert _cache.ResultCache(cache_dir).read(KEY).managed
    assert [e.key for e in _cache.ResultCache(cache_dir).entries()[0]] == [KEY]


def test_the_idle_lock_sweep_deletes_only_lock_files_it_made(cache_dir):
    _hold(_cache.ResultCache(cache_dir).lock(KEY))
    locks = Path(cache_dir, _cache.LOCKS_SUBDIR)
    made = sorted(p.name for p in locks.iterdir())
    assert made, "the lock left no files to sweep"
    for name in ("passwd", "notes.txt", "network-.lock", ".network-x.lock", "network-x.lock.bak"):
        (locks / name).write_text("theirs\n")

    _cache.ResultCache(cache_dir).tidy()

    assert sorted(p.name for p in locks.iterdir()) == sorted(
        ["passwd", "notes.txt", "network-.lock", ".network-x.lock", "network-x.lock.bak"])


@pytest.mark.parametrize("name", ["network-cnit-r-net.lock", "junk"])
def test_a_subdirectory_in_the_lock_dir_is_skipped_by_the_sweep(cache_dir, name):
    Path(cache_dir, _cache.LOCKS_SUBDIR, name).mkdir(parents=True)
    _cache.ResultCache(cache_dir).tidy()  # no IsADirectoryError
    assert Path(cache_dir, _cache.LOCKS_SUBDIR, name).is_dir()


def test_a_subdirectory_where_a_lock_file_belongs_is_an_error_naming_it(cache_dir):
    lock = Path(cache_dir, _cache.LOCKS_SUBDIR, "network-cnit-r-net.lock")
    lock.mkdir(parents=True)
    with pytest.raises(ConfigError) as caught:
        _hold(_cache.ResultCache(cache_dir).lock(KEY))
    assert caught.value.path == "cache_dir" and str(lock) in caught.value.message, caught.value.message


def test_a_dangling_lock_file_symlink_creates_nothing_at_its_target(cache_dir, tmp_path):
    target = tmp_path / "created-by-root"
    Path(cache_dir, _cache.LOCKS_SUBDIR).mkdir(parents=True, mode=0o700)
    lock = Path(cache_dir, _cache.LOCKS_SUBDIR, "network-cnit-r-net.lock")
    lock.symlink_to(target)
    with pytest.raises(ConfigError) as caught:
        _hold(_cache.ResultCache(cache_dir).lock(KEY))
    assert str(lock) in caught.value.message, caught.value.message
    assert not target.exists()
    _cache.ResultCache(cache_dir).tidy()
    assert not target.exists()


def test_a_symlinked_pending_dir_never_truncates_or_deletes_the_outside_file(cache_dir, victim):
    os.makedirs(cache_dir)
    os.symlink(victim, os.path.join(cache_dir, _cache.PENDING_SUBDIR))
    before = snapshot(victim)
    for operation in ("mark pending", "clear pending"):
        with pytest.raises(ConfigError):
            OPERATIONS[operation](cache_dir)
    assert snapshot(victim) == before


def test_a_cache_entry_symlink_is_not_read_through(cache_dir, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"kind": "cniCacheV1"}')
    results = Path(cache_dir, _cache.RESULTS_SUBDIR)
    results.mkdir(parents=True, mode=0o700)
    (results / KEY.file_name).symlink_to(secret)
    with pytest.raises(_cache.CacheError, match="not a regular file"):
        _cache.ResultCache(cache_dir).read(KEY)
    assert _cache.ResultCache(cache_dir).entries() == ([], [])
    assert _cache.ResultCache(cache_dir).delete(KEY)
    assert secret.exists() and not (results / KEY.file_name).is_symlink()


def _bridge_network(host, name: str) -> dict:
    conf = host.conflist(name, [], subnet="10.247.24.0/24")
    host.write_conflist(conf)
    return conf


@pytest.mark.parametrize("module", ["cni_attach", "cni_gc"])
def test_detach_and_gc_with_a_symlinked_lock_dir_delete_nothing_outside(host, victim, tmp_path, module):
    """The issue's attack: cnikit-locks swapped for a symlink to a directory between runs."""
    network = f"{PREFIX}hs{host.index}"
    _bridge_network(host, network)
    netns = host.netns(f"hs{host.index}")
    base = {"network": network, "netns": netns, "conf_dir": host.conf_dir, "cache_dir": host.cache_dir,
            "cni_path": [REAL_PLUGINS]}
    assert modules.run("cni_attach", base, str(tmp_path / "m"))["action"] == "added"
    locks = os.path.join(host.cache_dir, _cache.LOCKS_SUBDIR)
    assert not os.path.lexists(locks)  # the task tidied its idle lock files away
    os.symlink(victim, locks)
    before = snapshot(victim)

    if module == "cni_attach":
        result = modules.run("cni_attach", dict(base, state="absent"), str(tmp_path / "m"))
    else:
        result = modules.run("cni_gc", {"network": network, "conf_dir": host.conf_dir, "cache_dir": host.cache_dir,
                                        "cni_path": [REAL_PLUGINS], "valid_attachments": []}, str(tmp_path / "m"))

    assert result.get("failed"), result
    assert locks in result["msg"], result["msg"]
    assert snapshot(victim) == before
    os.unlink(locks)
    assert modules.run("cni_attach", dict(base, state="absent"), str(tmp_path / "m"))["action"] == "deleted"


# -- items 2 and 8: numbers Go cannot read, nesting Python cannot read ----------------------------

def _conf_text(mtu: str) -> str:
    return ('{"cniVersion": "1.0.0", "name": "cnit-r-n", "plugins": [{"type": "bridge", "mtu": %s, '
            '"ipam": {"type": "host-local", "subnet": "10.247.25.0/24"}}]}' % mtu)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_naming_the_path(tmp_path, number):
    _data, report = validate_text(_conf_text(number))
    assert [f.path for f in report.errors] == ["plugins[0].mtu"], report.to_dict()

    with pytest.raises(ConfigError) as caught:
        _network_file.build_conflist("cnit-r-n", config=_conf_text(number))
    assert caught.value.path == "config.plugins[0].mtu", caught.value

    with pytest.raises(ConfigError) as caught:
        _network_file.build_conflist("cnit-r-n", config=json.loads(_conf_text(number)))
    assert caught.value.path == "config.plugins[0].mtu", caught.value

    Path(tmp_path, "10-n.conflist").write_text(_conf_text(number))
    loaded = _conflist.load_conf_dir(str(tmp_path))
    assert not loaded.networks and "plugins[0].mtu" in loaded.problems[0].reason, loaded


def test_cni_info_reports_a_nan_file_invalid(tmp_path):
    needs_root()
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    (conf_dir / "10-n.conflist").write_text(_conf_text("NaN"))
    result = modules.run("cni_info", {"conf_dir": str(conf_dir), "cache_dir": str(tmp_path / "cache"),
                                      "cni_path": [REAL_PLUGINS]}, str(tmp_path / "m"))
    [fact] = result["networks"]
    assert fact["valid"] is False, fact
    assert any("plugins[0].mtu" in json.dumps(e) and "finite" in e["message"] for e in fact["errors"]), fact


def _deep(levels: int) -> str:
    return ('{"cniVersion": "1.0.0", "name": "cnit-r-n", "plugins": [{"type": "bridge", "x": '
            + "[" * levels + "]" * levels + "}]}")


@pytest.mark.parametrize("levels", [200, 1000, 100000])
def test_deep_nesting_is_refused_naming_the_depth(tmp_path, levels):
    _data, report = validate_text(_deep(levels))
    assert report.errors and "deep" in report.errors[0].message, report.to_dict()
    with pytest.raises(ConfigError, match="deep"):
        _network_file.build_conflist("cnit-r-n", config=_deep(levels))
    Path(tmp_path, "10-n.conflist").write_text(_deep(levels))
    loaded = _conflist.load_conf_dir(str(tmp_path))
    assert not loaded.networks and "deep" in loaded.problems[0].reason, loaded


def test_ordinary_nesting_is_accepted():
    _data, report = validate_text(_deep(20))
    assert not [f for f in report.errors if "deep" in f.message]


# -- items 3 and 4: cleartext mirrors and credentials on redirect ---------------------------------

class _Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves a directory and records each request's path and Authorization header; with
    ``redirect_to`` set, answers every GET with a 302 to the same path there."""

    seen: list = []
    redirect_to = None

    def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


@contextlib.contextmanager
def _server(root: str, redirect_to: str | None = None):
    handler = type("Handler", (_Recorder,), {"seen": [], "redirect_to": redirect_to})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield handler, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def release(tmp_path):
    needs_root()
    root = str(tmp_path / "mirror")
    tarball = release_server.build_release(root, "1.1.1", "amd64", plugins=["loopback"], source=REAL_PLUGINS)
    return root, os.path.relpath(tarball, root)


@pytest.mark.parametrize("force_basic_auth", [True, False])
def test_credentials_never_follow_a_redirect_to_another_origin(tmp_path, release, force_basic_auth):
    root, relative = release
    with contextlib.ExitStack() as servers:
        other, other_url = servers.enter_context(_server(root))
        given, given_url = servers.enter_context(_server(root, redirect_to=other_url))
        result = modules.run("cni_plugin_install", {
            "url": f"{given_url}/{relative}", "version": "1.1.1", "dest": str(tmp_path / "bin"),
            "url_username": "operator", "url_password": "s3cret", "force_basic_auth": force_basic_auth,
        }, str(tmp_path / "m"))
    assert not result.get("failed"), result
    assert sorted(path for path, _auth in given.seen) == [f"/{relative}", f"/{relative}.sha256"]
    assert sorted(path for path, _auth in other.seen) == [f"/{relative}", f"/{relative}.sha256"]
    assert [auth for _path, auth in other.seen] == [None, None], "credentials went to another origin"
    if force_basic_auth:
        assert all(auth for _path, auth in given.seen), "credentials were not sent to their own origin"


@pytest.mark.parametrize("checksum, warned", [(None, True), ("url", True), ("pinned", False)])
def test_a_cleartext_install_without_a_pinned_checksum_warns(tmp_path, release, checksum, warned):
    root, relative = release
    with _server(root) as (_handler, url):
        digest = hashlib.sha256(Path(root, relative).read_bytes()).hexdigest()
        args = {"url": f"{url}/{relative}", "version": "1.1.1", "dest": str(tmp_path / "bin")}
        if checksum == "url":
            args["checksum"] = f"sha256:{url}/{relative}.sha256"
        elif checksum == "pinned":
            args["checksum"] = f"sha256:{digest}"
        result = modules.run("cni_plugin_install", args, str(tmp_path / "m"))
    assert not result.get("failed"), result
    warnings = [w for w in _warnings(result) if "cleartext" in w]
    assert bool(warnings) == warned, result.get("warnings")


# -- item 9: conflist modes -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["4777", "2644", "1644", 0o4755])
def test_set_id_and_sticky_modes_are_refused(mode):
    with pytest.raises(ConfigError) as caught:
        _network_file.parse_mode(mode)
    assert caught.value.path == "mode" and caught.value.value == mode


@pytest.mark.parametrize("mode, warned", [("0666", True), ("0664", True), ("0644", False), ("0600", False)])
def test_a_conflist_others_can_write_warns(tmp_path, mode, warned):
    needs_root()
    result = modules.run("cni_network", {"name": "cnit-r-m", "conf_dir": str(tmp_path / "net.d"), "mode": mode,
                                         "validate": "none", "plugins": [{"type": "loopback"}]}, str(tmp_path / "m"))
    assert not result.get("failed"), result
    assert bool([w for w in _warnings(result) if "mode" in w and "write" in w]) == warned, result


def test_a_set_id_mode_changes_nothing_through_the_module(tmp_path):
    needs_root()
    conf_dir = tmp_path / "net.d"
    result = modules.run("cni_network", {"name": "cnit-r-m", "conf_dir": str(conf_dir), "mode": "4777",
                                         "validate": "none", "plugins": [{"type": "loopback"}]}, str(tmp_path / "m"))
    assert result.get("failed") and result["msg"].startswith("mode: "), result
    assert not conf_dir.exists()


# -- item 6: a name too long for its file ---------------------------------------------------------

def test_a_network_name_too_long_for_its_file_name_is_refused_up_front(tmp_path):
    needs_root()
    name = "n" * 250
    with pytest.raises(ConfigError) as caught:
        _network_file.conflist_path(str(tmp_path), name)
    assert caught.value.path == "name", caught.value
    result = modules.run("cni_network", {"name": name, "conf_dir": str(tmp_path / "net.d"), "validate": "none",
                                         "plugins": [{"type": "loopback"}]}, str(tmp_path / "m"))
    assert result.get("failed") and result["msg"].startswith("name: ") and "255" in result["msg"], result
    assert not (tmp_path / "net.d").exists()


# -- item 10: uninstalling files changed since the install --------------------------------------------

def test_absent_leaves_and_reports_binaries_changed_since_the_install(tmp_path):
    needs_root()
    dest = tmp_path / "bin"
    options = _install.Options(dest=str(dest), src_dir=REAL_PLUGINS, plugins=("loopback", "bridge"))
    _install.ensure(options, None, str(tmp_path), check_mode=False)
    (dest / "loopback").write_bytes(b"#!/bin/sh\necho replaced by the operator\n")

    for check_mode in (True, False):
        result = _install.ensure(_install.Options(state="absent", dest=str(dest)), None, str(tmp_path), check_mode)
        assert result["removed"] == ["bridge"] and result["modified"] == ["loopback"], result
        assert any("loopback" in w for w in result["warnings"]), result
    assert (dest / "loopback").read_bytes().startswith(b"#!/bin/sh") and not (dest / "bridge").exists()


# -- item 11: namespaces given as paths --------------------------------------------------------------

@pytest.mark.parametrize("value", ["/var/run/netns/../../etc/passwd", "/proc/1/../self/ns/net", "/a/./../b"])
def test_a_netns_path_with_dot_dot_is_refused(value):
    with pytest.raises(ConfigError) as caught:
        netns_path(value)
    assert caught.value.path == "netns" and caught.value.value == value


def test_an_ordinary_file_given_as_netns_is_refused_before_add(host, tmp_path):
    network = f"{PREFIX}hf{host.index}"
    _bridge_network(host, network)
    plain = tmp_path / "not-a-namespace"
    plain.write_text("")
    result = modules.run("cni_attach", {"network": network, "netns": str(plain), "conf_dir": host.conf_dir,
                                        "cache_dir": host.cache_dir, "cni_path": [REAL_PLUGINS]}, str(tmp_path / "m"))
    assert result.get("failed") and result["msg"].startswith("netns: "), result
    assert "network namespace" in result["msg"]
    assert not list(Path(host.cache_dir, _cache.RESULTS_SUBDIR).glob("*")) if Path(host.cache_dir).exists() else True


# -- issue 28: conf dir files that are not files --------------------------------------------------

OK_CONFLIST = '{"cniVersion": "1.0.0", "name": "cnit-r-ok", "plugins": [{"type": "loopback"}]}'


@pytest.fixture
def odd_conf_dir(tmp_path):
    """A conf dir holding a FIFO no one writes to, a conflist linked to /dev/zero, one over the
    size cap, and one good network."""
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    os.mkfifo(conf_dir / "10-fifo.conflist")
    (conf_dir / "20-zero.conflist").symlink_to("/dev/zero")
    (conf_dir / "30-big.conflist").write_text('{"pad": "' + "x" * (1 << 20) + '"}')
    (conf_dir / "40-ok.conflist").write_text(OK_CONFLIST)
    return conf_dir


ODD_FILES = {"10-fifo.conflist": "a FIFO", "20-zero.conflist": "a character device", "30-big.conflist": "larger than"}


def _run_bounded(module: str, args: dict, workdir: str) -> dict:
    """A module run that must neither hang nor flood memory: killed after 60 s, with 2 GiB of
    address space (reading /dev/zero whole would take it all)."""
    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run(modules.command(module, args, workdir), capture_output=True, text=True,
                          env=modules._env(), timeout=60, preexec_fn=limit_memory, check=False)  # pylint: disable=protected-access
    assert done.stdout, f"{module} died (rc {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout)


def test_cni_info_reports_fifo_device_and_oversized_conf_files_as_unloadable(tmp_path, odd_conf_dir):
    needs_root()
    result = _run_bounded("cni_info", {"conf_dir": str(odd_conf_dir), "cache_dir": str(tmp_path / "cache"),
                                       "cni_path": [REAL_PLUGINS]}, str(tmp_path / "m"))
    assert not result.get("failed"), result
    facts = {os.path.basename(f["file"]): f for f in result["networks"]}
    assert facts["40-ok.conflist"]["valid"] is True, facts
    for name, kind in ODD_FILES.items():
        assert facts[name]["valid"] is False and kind in facts[name]["errors"][0]["message"], facts[name]


def test_cni_network_warns_of_unloadable_conf_files_and_writes_its_own(tmp_path, odd_conf_dir):
    """Its file sorts before theirs: libcni reaches it, so they are warnings, not errors."""
    needs_root()
    result = _run_bounded("cni_network", {"name": "cnit-r-new", "conf_dir": str(odd_conf_dir), "priority": 5,
                                          "plugins": [{"type": "loopback"}], "cni_path": [REAL_PLUGINS]},
                          str(tmp_path / "m"))
    assert not result.get("failed") and result["changed"], result
    warnings = " ".join(_warnings(result))
    for name, kind in ODD_FILES.items():
        assert name in warnings and kind in warnings, warnings


@pytest.mark.parametrize("target", ["fifo", "zero"])
def test_cni_network_fails_naming_a_fifo_or_device_at_its_own_path(tmp_path, target):
    needs_root()
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    path = conf_dir / "10-cnit-r-odd.conflist"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    result = _run_bounded("cni_network", {"name": "cnit-r-odd", "conf_dir": str(conf_dir), "validate": "none",
                                          "plugins": [{"type": "loopback"}]}, str(tmp_path / "m"))
    assert result.get("failed") and str(path) in result["msg"] and "not a regular file" in result["msg"], result
    assert path.is_symlink() or stat.S_ISFIFO(path.lstat().st_mode), "the file was replaced"


# -- issue 28: a download's overall deadline ------------------------------------------------------

class _Trickler(http.server.BaseHTTPRequestHandler):
    """Announces 200 bytes and sends one every half second: each read gets a byte well within
    any per-read timeout, and the whole would take 100 s."""

    def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
        self.send_response(200)
        self.send_header("Content-Length", "200")
        self.end_headers()
        with contextlib.suppress(OSError):
            for _byte in range(200):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.5)

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


def test_timeout_bounds_the_whole_download_of_a_trickling_mirror(tmp_path):
    needs_root()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/cni-plugins-linux-amd64-v1.1.1.tgz"
    started = time.monotonic()
    try:
        result = _run_bounded("cni_plugin_install", {"url": url, "version": "1.1.1", "checksum": "sha256:" + "0" * 64,
                                                     "dest": str(tmp_path / "bin"), "timeout": 3}, str(tmp_path / "m"))
    finally:
        server.shutdown()
        server.server_close()
    elapsed = time.monotonic() - started
    assert result.get("failed") and "took longer than timeout (3 s)" in result["msg"], result
    assert elapsed < 15, f"the install took {elapsed:.0f} s with timeout 3"
    assert not (tmp_path / "bin").exists()


# -- issue 28: an https mirror redirecting to http ------------------------------------------------

@contextlib.contextmanager
def _tls_redirector(tmp_path, redirect_to: str):
    """An https server on 127.0.0.1 (a self-signed certificate) answering every GET with a 302
    to the same path at ``redirect_to``."""
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    handler = type("Handler", (_Recorder,), {"seen": [], "redirect_to": redirect_to})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("pinned", [False, True])
def test_an_https_mirror_redirecting_to_http_warns_of_cleartext(tmp_path, release, pinned):
    root, relative = release
    with contextlib.ExitStack() as servers:
        _plain, plain_url = servers.enter_context(_server(root))
        tls_url = servers.enter_context(_tls_redirector(tmp_path, plain_url))
        args = {"url": f"{tls_url}/{relative}", "version": "1.1.1", "dest": str(tmp_path / "bin"),
                "validate_certs": False}
        if pinned:
            args["checksum"] = "sha256:" + hashlib.sha256(Path(root, relative).read_bytes()).hexdigest()
        result = _run_bounded("cni_plugin_install", args, str(tmp_path / "m"))
    assert not result.get("failed"), result
    warnings = [w for w in _warnings(result) if "cleartext" in w]
    if pinned:
        assert not warnings, warnings
    else:
        assert len(warnings) == 1 and f"redirected to {plain_url}/{relative}" in warnings[0], result.get("warnings")
        assert f"redirected to {plain_url}/{relative}.sha256" in warnings[0], warnings


# -- issue 28: a cache dir another user can change -----------------------------------------------

@pytest.mark.parametrize("owner, mode, warned", [
    (65534, 0o755, "owned by"), (0, 0o775, "writable by group or others"), (0, 0o777, "writable by group or others"),
    (0, 0o755, None), (0, 0o700, None)])
def test_a_cache_dir_another_user_can_change_is_used_with_a_warning(tmp_path, owner, mode, warned):
    needs_root()
    cache_dir, conf_dir = tmp_path / "cache", tmp_path / "net.d"
    cache_dir.mkdir()
    conf_dir.mkdir()
    os.chown(cache_dir, owner, 0)
    os.chmod(cache_dir, mode)
    common = {"conf_dir": str(conf_dir), "cache_dir": str(cache_dir), "cni_path": [REAL_PLUGINS]}
    for module, args in (("cni_gc", {}), ("cni_info", {"gather": ["attachments"]})):
        result = modules.run(module, dict(common, **args), str(tmp_path / "m"))
        assert not result.get("failed"), result
        about = [w for w in _warnings(result) if "cache_dir" in w]
        if not warned:
            assert not about, about
            continue
        assert len(about) == 1 and warned in about[0], (module, result.get("warnings"))
        assert str(cache_dir) in about[0] and f"mode 0{mode:o}" in about[0] and f"uid {owner}" in about[0], about
        assert "DEL" in about[0], about


# -- issue 28: the host's own namespace as netns -----------------------------------------------------

@pytest.mark.parametrize("given", ["pid 1", "this process", "a test namespace"])
def test_the_hosts_own_namespace_as_netns_warns(host, tmp_path, given):
    """In check mode only: nothing may be configured in the machine's own namespace."""
    if given == "pid 1" and not os.access("/proc/1/ns/net", os.R_OK):
        pytest.skip("PID 1's namespace cannot be opened here (a sandbox whose PID 1 is another user's)")
    network = f"{PREFIX}ho{host.index}"
    _bridge_network(host, network)
    netns = {"pid 1": "/proc/1/ns/net", "this process": f"/proc/{os.getpid()}/ns/net",
             "a test namespace": host.netns(f"ho{host.index}")}[given]
    result = modules.run("cni_attach", {"network": network, "netns": netns, "ifname": "cnit-ho0",
                                        "conf_dir": host.conf_dir, "cache_dir": host.cache_dir,
                                        "cni_path": [REAL_PLUGINS], "_ansible_check_mode": True}, str(tmp_path / "m"))
    assert not result.get("failed") and result["action"] == "added", result
    about = [w for w in _warnings(result) if "host's own network namespace" in w]
    if given == "a test namespace":
        assert not about, about
    else:
        assert len(about) == 1 and netns in about[0] and "configure" in about[0], result.get("warnings")

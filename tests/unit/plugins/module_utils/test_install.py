# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The installer (_install, _sources, _download, _manifest) against a real HTTP server on 127.0.0.1 serving tarballs built from the distro's
plugin binaries in the upstream release layout."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import socket
import stat
import tarfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import release_server

from ansible_collections.cnikit.cni.plugins.module_utils._download import (
    Checksum, Limits, fetch_capped, mask_url, parse_checksum, parse_checksum_file,
)
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError, PluginError, ReleaseError
from ansible_collections.cnikit.cni.plugins.module_utils._install import ARGUMENT_SPEC, Options, ensure
from ansible_collections.cnikit.cni.plugins.module_utils._sources import host_arch, normalize_version, release_url

DISTRO = release_server.PLUGIN_SOURCE
DISTRO_PLUGINS = sorted(os.listdir(DISTRO))
ARCH = "amd64"
V1, V2 = "1.1.1", "1.1.2"

pytestmark = pytest.mark.skipif(not DISTRO_PLUGINS, reason="needs the distro's CNI plugins in /usr/lib/cni")


# --- fixtures ----------------------------------------------------------------------------------

class CountingFetch:
    """urllib-based fetch that remembers every URL it was asked for."""

    def __init__(self):
        self.urls = []

    def __call__(self, url):
        self.urls.append(url)
        return urllib.request.urlopen(url, timeout=10)  # noqa: S310 - 127.0.0.1 only


@pytest.fixture
def fetch():
    return CountingFetch()


@pytest.fixture
def dest(tmp_path):
    return str(tmp_path / "bin")


def run(server, dest, fetch, tmp_path, check_mode=False, **overrides):
    options = {"dest": dest, "version": V1, "arch": ARCH, "base_url": server["base_url"]} | overrides
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ensure(Options(**options), fetch, str(work), check_mode)


def snapshot(path) -> dict:
    """Every entry under ``path`` with its mode, owner and content digest."""
    entries = {}
    for directory, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(directory, name)
            st = os.lstat(full)
            digest = None
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
            entries[os.path.relpath(full, path)] = (st.st_mode, st.st_uid, digest)
    return entries


def tarball_path(server, version):
    return server["root"] / f"v{version}" / f"cni-plugins-linux-{ARCH}-v{version}.tgz"


def sha256_of(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --- names, URLs, checksums ----------------------------------------------------------------------

@pytest.mark.parametrize(("machine", "byteorder", "arch"), [
    ("x86_64", "little", "amd64"), ("aarch64", "little", "arm64"), ("armv7l", "little", "arm"),
    ("armv6l", "little", "arm"), ("ppc64le", "little", "ppc64le"), ("s390x", "big", "s390x"),
    ("riscv64", "little", "riscv64"), ("mips64", "little", "mips64le"),
])
def test_host_arch(machine, byteorder, arch):
    assert host_arch(machine, byteorder) == arch


@pytest.mark.parametrize("machine", ["mips64", "i686", "sparc64"])
def test_host_arch_without_release(machine):
    with pytest.raises(ConfigError, match=f"arch: no CNI plugins release for machine type '{machine}'"):
        host_arch(machine, "big")


@pytest.mark.parametrize(("given", "bare"), [("v1.9.1", "1.9.1"), ("1.9.1", "1.9.1"), (" V1.10.0 ", "1.10.0")])
def test_normalize_version(given, bare):
    assert normalize_version(given) == bare


@pytest.mark.parametrize("bad", ["", "v", "1.9", "latest", "1.9.1/../x", "vv1.9.1", "1.9.1-rc.1", "1.1.1+ds1",
                                 "v1.9.1-flannel1"])
def test_normalize_version_rejects(bad):
    with pytest.raises(ConfigError, match="^version: must be a release version") as info:
        normalize_version(bad)
    assert info.value.value == bad


def test_release_url():
    assert release_url("https://mirror.example/cni/", "1.9.1", "arm64") == \
        "https://mirror.example/cni/v1.9.1/cni-plugins-linux-arm64-v1.9.1.tgz"


def test_mask_url_hides_credentials():
    assert mask_url("https://bob:s3cret@mirror.example:8443/x.tgz") == "https://***@mirror.example:8443/x.tgz"
    assert mask_url("https://mirror.example/x.tgz") == "https://mirror.example/x.tgz"


def test_parse_checksum():
    hexdigest = "ab" * 32
    assert parse_checksum(f"sha256:{hexdigest.upper()}") == Checksum("sha256", hexdigest=hexdigest)
    assert parse_checksum("sha512:https://h/x.sha512") == Checksum("sha512", url="https://h/x.sha512")


@pytest.mark.parametrize("bad", ["ab" * 32, "md5:" + "ab" * 16, "sha256:abc", "sha512:" + "ab" * 32, "sha256:"])
def test_parse_checksum_rejects(bad):
    with pytest.raises(ConfigError, match="^checksum: "):
        parse_checksum(bad)


def test_parse_checksum_rejection_masks_credentials():
    with pytest.raises(ConfigError) as info:
        parse_checksum("md5:https://bob:s3cret@h/x")
    assert "s3cret" not in str(info.value)


def test_parse_checksum_file():
    one, two = "1" * 64, "2" * 64
    assert parse_checksum_file(f"{one}  a.tgz\n".encode(), "a.tgz", "sha256", "u") == one
    assert parse_checksum_file(f"{one}\n".encode(), "a.tgz", "sha256", "u") == one
    assert parse_checksum_file(f"{one}  b.tgz\n{two} *a.tgz\n".encode(), "a.tgz", "sha256", "u") == two
    with pytest.raises(ReleaseError, match="no sha256 digest for a.tgz"):
        parse_checksum_file(f"{one}  b.tgz\n{two}  c.tgz\n".encode(), "a.tgz", "sha256", "u")
    with pytest.raises(ConfigError, match="not a sha256 digest"):
        parse_checksum_file(b"<html>not found</html>\n", "a.tgz", "sha256", "u")


# --- the install lifecycle -----------------------------------------------------------------------

def test_first_install(server, dest, fetch, tmp_path):
    result = run(server, dest, fetch, tmp_path)
    assert result["changed"] and result["downloaded"]
    assert result["installed"] == DISTRO_PLUGINS and result["updated"] == [] and result["removed"] == []
    assert sorted(os.listdir(dest)) == sorted(DISTRO_PLUGINS + [".cnikit-binaries.json", ".cnikit-manifest.json"])
    for name in DISTRO_PLUGINS:
        st = os.stat(os.path.join(dest, name))
        assert stat.S_IMODE(st.st_mode) == 0o755 and (st.st_uid, st.st_gid) == (0, 0)
        info = result["plugins"][name]
        assert info["path"] == os.path.join(dest, name)
        assert info["sha256"] == sha256_of(info["path"])
    assert result["plugins"]["bridge"]["cni_versions"][-1] == "1.0.0"
    assert result["plugins"]["firewall"]["cni_versions"][0] == "0.4.0"
    manifest = json.loads(Path(dest, ".cnikit-manifest.json").read_text())["sets"]["reference"]
    assert manifest["version"] == V1 and manifest["source"] == f"{server['base_url']}/v{V1}/cni-plugins-linux-{ARCH}-v{V1}.tgz"
    assert manifest["tarball"]["sha256"] == sha256_of(tarball_path(server, V1))
    assert stat.S_IMODE(os.stat(os.path.join(dest, ".cnikit-manifest.json")).st_mode) == 0o644
    assert fetch.urls == [manifest["source"], manifest["source"] + ".sha256"]
    assert result["diff"] == {"before": {}, "after": {"format": 2, "sets": {"reference": {
        "version": V1, "source": manifest["source"], "files": DISTRO_PLUGINS}}}}


def test_rerun_downloads_nothing(server, dest, fetch, tmp_path):
    first = run(server, dest, fetch, tmp_path)
    assert [w for w in first["warnings"] if "travel(s) in cleartext" in w]  # the test server's plain http
    before = snapshot(dest)
    fetch.urls.clear()
    for check_mode in (True, False):
        result = run(server, dest, fetch, tmp_path, check_mode=check_mode, version="v" + V1)
        assert not result["changed"] and not result["downloaded"]
        assert result["installed"] == result["updated"] == result["removed"] == []
        assert result["warnings"] == []  # nothing travels: the download it warned of is not repeated
    assert fetch.urls == []
    assert snapshot(dest) == before


def test_upgrade_replaces_every_binary_and_removes_dropped_ones(server, dest, fetch, tmp_path):
    run(server, dest, fetch, tmp_path)
    Path(dest, "not-ours").write_bytes(b"keep me")
    result = run(server, dest, fetch, tmp_path, version=V2)
    assert result["changed"] and result["version"] == V2
    assert result["removed"] == ["sbr"] and result["installed"] == []
    assert result["updated"] == [n for n in DISTRO_PLUGINS if n != "sbr"]
    assert not os.path.exists(os.path.join(dest, "sbr"))
    assert Path(dest, "bridge").read_bytes().endswith(b"v2")
    assert Path(dest, "not-ours").read_bytes() == b"keep me"
    assert not [n for n in os.listdir(dest) if n.startswith(".cnikit-stage-")]
    assert run(server, dest, fetch, tmp_path, version=V2)["changed"] is False


def test_subset_and_back(server, dest, fetch, tmp_path):
    run(server, dest, fetch, tmp_path)
    result = run(server, dest, fetch, tmp_path, plugins=("loopback", "bridge", "bridge"))
    assert result["changed"] and result["installed"] == result["updated"] == []
    assert result["removed"] == [n for n in DISTRO_PLUGINS if n not in ("bridge", "loopback")]
    assert sorted(result["plugins"]) == ["bridge", "loopback"]
    assert sorted(os.listdir(dest)) == [".cnikit-binaries.json", ".cnikit-manifest.json", "bridge", "loopback"]
    assert not run(server, dest, fetch, tmp_path, plugins=("bridge", "loopback"))["changed"]
    assert run(server, dest, fetch, tmp_path)["installed"] == [n for n in DISTRO_PLUGINS if n not in ("bridge", "loopback")]


def test_subset_naming_an_unknown_plugin(server, dest, fetch, tmp_path):
    with pytest.raises(ConfigError, match=r"^plugins: not in .* which holds bandwidth, bridge") as info:
        run(server, dest, fetch, tmp_path, plugins=("bridge", "flannel"))
    assert info.value.value == ["flannel"]
    assert not os.path.exists(dest)


@pytest.mark.parametrize("bad", [("LICENSE",), ("../bridge",), ()])
def test_plugins_must_be_binary_names(server, dest, fetch, tmp_path, bad):
    with pytest.raises(ConfigError, match="^plugins: "):
        run(server, dest, fetch, tmp_path, plugins=bad)


@pytest.mark.parametrize("drift", ["modify", "delete", "chmod", "symlink"])
def test_drift_is_repaired(server, dest, fetch, tmp_path, drift):
    run(server, dest, fetch, tmp_path)
    bridge = Path(dest, "bridge")
    good = bridge.read_bytes()
    if drift == "modify":
        bridge.write_bytes(good + b"tampered")
    elif drift == "delete":
        bridge.unlink()
    elif drift == "chmod":
        bridge.chmod(0o777)
    else:
        bridge.unlink()
        bridge.symlink_to(os.path.join(DISTRO, "bridge"))
    checked = run(server, dest, fetch, tmp_path, check_mode=True)
    result = run(server, dest, fetch, tmp_path)
    expected = {"installed": ["bridge"], "updated": []} if drift == "delete" else {"installed": [], "updated": ["bridge"]}
    for outcome in (checked, result):
        assert outcome["changed"] and outcome["removed"] == []
        assert {k: outcome[k] for k in expected} == expected
    assert bridge.read_bytes() == good and not bridge.is_symlink()
    assert stat.S_IMODE(bridge.stat().st_mode) == 0o755


def test_absent_removes_only_what_was_installed(server, dest, fetch, tmp_path):
    run(server, dest, fetch, tmp_path)
    Path(dest, "not-ours").write_bytes(b"keep me")
    partial = run(server, dest, fetch, tmp_path, state="absent", plugins=("bridge", "sbr"))
    assert partial["removed"] == ["bridge", "sbr"] and os.path.exists(os.path.join(dest, "loopback"))
    checked = run(server, dest, fetch, tmp_path, check_mode=True, state="absent")
    assert checked["changed"] and os.path.exists(os.path.join(dest, "loopback"))
    result = run(server, dest, fetch, tmp_path, state="absent")
    assert result["removed"] == [n for n in DISTRO_PLUGINS if n not in ("bridge", "sbr")]
    assert os.listdir(dest) == ["not-ours"]
    assert result["diff"]["after"] == {} and result["plugins"] == {}
    assert not run(server, dest, fetch, tmp_path, state="absent")["changed"]


def test_check_mode_writes_nothing_and_says_it_downloaded(server, dest, fetch, tmp_path):
    result = run(server, dest, fetch, tmp_path, check_mode=True)
    assert result["changed"] and result["downloaded"] and result["installed"] == DISTRO_PLUGINS
    assert result["plugins"]["bridge"]["cni_versions"] is None
    assert not os.path.exists(dest)
    run(server, dest, fetch, tmp_path)
    before = snapshot(dest)
    upgrade = run(server, dest, fetch, tmp_path, check_mode=True, version=V2)
    assert upgrade["changed"] and upgrade["removed"] == ["sbr"] and len(upgrade["updated"]) == len(DISTRO_PLUGINS) - 1
    assert snapshot(dest) == before
    assert os.listdir(tmp_path / "work") == []


@pytest.mark.parametrize("checksum", [f"sha256:{'0' * 64}", f"sha512:{'0' * 128}", "tampered"])
def test_bad_checksum_leaves_dest_untouched(server, dest, fetch, tmp_path, checksum):
    run(server, dest, fetch, tmp_path)
    before = snapshot(dest)
    if checksum == "tampered":
        bad_sums = tmp_path / "bad.sha256"
        bad_sums.write_text(f"{'0' * 64}  cni-plugins-linux-{ARCH}-v{V2}.tgz\n")
        checksum = "sha256:" + bad_sums.as_uri()
    with pytest.raises(ReleaseError, match=f"^checksum mismatch for {server['base_url']}/v{V2}/.*: expected sha"):
        run(server, dest, fetch, tmp_path, version=V2, checksum=checksum)
    assert snapshot(dest) == before


def test_pinned_checksums_and_checksum_urls(server, dest, fetch, tmp_path):
    tarball = tarball_path(server, V1)
    url = f"{server['base_url']}/v{V1}/{tarball.name}"
    sha512 = hashlib.sha512(tarball.read_bytes()).hexdigest()
    assert run(server, dest, fetch, tmp_path, checksum=f"sha512:{url}.sha512")["changed"]
    fetch.urls.clear()
    # A pin equal to the recorded digest keeps the re-run download-free; a different pin does not.
    assert not run(server, dest, fetch, tmp_path, checksum=f"sha512:{sha512}")["changed"]
    assert not run(server, dest, fetch, tmp_path, checksum=f"sha256:{sha256_of(tarball)}")["changed"]
    assert fetch.urls == []
    with pytest.raises(ReleaseError, match="checksum mismatch"):
        run(server, dest, fetch, tmp_path, checksum=f"sha256:{'1' * 64}")


def test_full_url_and_force(server, dest, fetch, tmp_path):
    url = f"{server['base_url']}/v{V1}/{tarball_path(server, V1).name}"
    assert run(server, dest, fetch, tmp_path, url=url, base_url="http://unused.invalid")["installed"] == DISTRO_PLUGINS
    fetch.urls.clear()
    forced = run(server, dest, fetch, tmp_path, url=url, force=True)
    assert forced["changed"] and forced["updated"] == DISTRO_PLUGINS and fetch.urls == [url, url + ".sha256"]


def test_version_is_required_for_a_download(server, dest, fetch, tmp_path):
    with pytest.raises(ConfigError, match="^version: is required"):
        run(server, dest, fetch, tmp_path, version=None)


def test_src_tarball(server, dest, fetch, tmp_path):
    tarball = str(tarball_path(server, V1))
    result = run(server, dest, fetch, tmp_path, version=None, src=tarball, checksum=f"sha256:{sha256_of(tarball)}")
    assert result["installed"] == DISTRO_PLUGINS and result["version"] == f"sha256:{sha256_of(tarball)}"
    assert result["source"] == tarball and not result["downloaded"] and fetch.urls == []
    assert not run(server, dest, fetch, tmp_path, version=None, src=tarball)["changed"]
    with pytest.raises(ReleaseError, match="checksum mismatch"):
        run(server, dest, fetch, tmp_path, version=None, src=tarball, checksum=f"sha256:{'2' * 64}")


def test_src_dir(server, dest, fetch, tmp_path):
    result = run(server, dest, fetch, tmp_path, version=None, src_dir=DISTRO)
    assert result["installed"] == DISTRO_PLUGINS and result["version"].startswith("sha256:")
    assert all(Path(dest, n).read_bytes() == Path(DISTRO, n).read_bytes() for n in DISTRO_PLUGINS)
    assert not run(server, dest, fetch, tmp_path, version=None, src_dir=DISTRO)["changed"]
    with pytest.raises(ConfigError, match="^checksum: applies to tarballs"):
        run(server, dest, fetch, tmp_path, version=None, src_dir=DISTRO, checksum="sha256:" + "0" * 64)


def test_binary_that_fails_version_aborts_before_any_replacement(server, dest, fetch, tmp_path):
    run(server, dest, fetch, tmp_path)
    before = snapshot(dest)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("bridge", "loopback"):
        Path(broken, name).write_bytes(Path(DISTRO, name).read_bytes() + b"new")
        Path(broken, name).chmod(0o755)
    Path(broken, "vrf").write_bytes(b"#!/bin/sh\necho not a plugin >&2\nexit 3\n")
    Path(broken, "vrf").chmod(0o755)
    with pytest.raises(PluginError, match="vrf failed .*not a plugin"):
        run(server, dest, fetch, tmp_path, version=V2, src_dir=str(broken))
    assert snapshot(dest) == before


def test_a_refused_first_install_leaves_no_directory_behind(server, fetch, tmp_path):
    """dest and its missing parents are created for the install; one that fails takes them away."""
    broken = tmp_path / "broken"
    broken.mkdir()
    Path(broken, "bridge").write_bytes(b"#!/bin/sh\necho not a plugin >&2\nexit 3\n")
    Path(broken, "bridge").chmod(0o755)
    dest = tmp_path / "opt" / "cni" / "bin"
    with pytest.raises(PluginError, match="bridge failed .*not a plugin"):
        run(server, str(dest), fetch, tmp_path, src_dir=str(broken), plugins=("bridge",))
    assert not (tmp_path / "opt").exists()


def test_corrupt_manifest_is_reported(server, dest, fetch, tmp_path):
    os.makedirs(dest)
    Path(dest, ".cnikit-manifest.json").write_text("{not json")
    with pytest.raises(ReleaseError, match=r"\.cnikit-manifest\.json is not valid JSON .* remove it"):
        run(server, dest, fetch, tmp_path)
    Path(dest, ".cnikit-manifest.json").write_text(json.dumps({"format": 1, "files": {"../etc/passwd": "x"}}))
    with pytest.raises(ReleaseError, match="not a plugin name"):
        run(server, dest, fetch, tmp_path, state="absent")


def test_oversized_download(server, dest, fetch, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    options = Options(dest=dest, version=V1, arch=ARCH, base_url=server["base_url"])
    with pytest.raises(ReleaseError, match="larger than the limit of 1000 bytes"):
        ensure(options, fetch, str(work), False, Limits(download=1000))
    assert not os.path.exists(dest) and os.listdir(work) == []


def test_unreachable_server(dest, fetch, tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = {"base_url": f"http://bob:pw@127.0.0.1:{port}"}
    with pytest.raises(ReleaseError, match=rf"^download of http://\*\*\*@127\.0\.0\.1:{port}/v1\.1\.1/\S+ failed: "):
        run(server, dest, fetch, tmp_path)
    assert not os.path.exists(dest)


def test_a_byte_just_before_the_deadline_then_silence_ends_the_download_at_the_deadline():
    # The deadline was checked only once a read returned: the read after that byte waited the
    # whole per-read timeout, and the download took about twice its timeout.
    seconds, silence = 2.0, threading.Event()

    class LateByte(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            for pause in (0, seconds - 0.5):
                time.sleep(pause)
                self.wfile.write(b"x")
                self.wfile.flush()
            silence.wait(30)

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LateByte)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/late.tgz"
    started = time.monotonic()
    try:
        with pytest.raises(ReleaseError, match=r"took longer than timeout \(2 s\): 2 bytes had arrived"):
            fetch_capped(lambda url: urllib.request.urlopen(url, timeout=seconds),  # noqa: S310 - 127.0.0.1 only
                         url, 1000, lambda chunk: None, seconds)
        elapsed = time.monotonic() - started
    finally:
        silence.set()
        server.shutdown()
        server.server_close()
    assert elapsed < seconds + 1, f"the download took {elapsed:.1f} s with timeout {seconds:g}"


# --- hostile tarballs ---------------------------------------------------------------------------

def _member(name, kind=tarfile.REGTYPE, data=b"", mode=0o755, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


HOSTILE = {
    "absolute path": ([_member("/bridge", data=b"x")], "has an absolute path"),
    "dot-dot": ([_member("./../bridge", data=b"x")], "contains '..'"),
    "symlink": ([_member("./bridge", tarfile.SYMTYPE, linkname="/bin/sh")], "is a link"),
    "hard link": ([_member("./a", data=b"x"), _member("./bridge", tarfile.LNKTYPE, linkname="./a")], "is a link"),
    "char device": ([_member("./bridge", tarfile.CHRTYPE)], "is a device, fifo"),
    "block device": ([_member("./bridge", tarfile.BLKTYPE)], "is a device, fifo"),
    "fifo": ([_member("./bridge", tarfile.FIFOTYPE)], "is a device, fifo"),
    "setuid": ([_member("./bridge", data=b"x", mode=0o4755)], "setuid or setgid"),
    "setgid": ([_member("./bridge", data=b"x", mode=0o2755)], "setuid or setgid"),
    "subdirectory": ([_member("./sub", tarfile.DIRTYPE), _member("./sub/bridge", data=b"x")], "is a subdirectory"),
    "oversized member": ([_member("./bridge", data=b"x" * 5000)], "over the limit of 4096"),
    "oversized total": ([_member(f"./p{i}", data=b"x" * 4000) for i in range(3)], "more than 10000 bytes"),
    "backslash": ([_member("./..\\bridge", data=b"x")], "is not a plain file name"),
    "duplicate": ([_member("./bridge", data=b"x"), _member("bridge", data=b"y")], "appears twice"),
    "only extras": ([_member("./LICENSE", data=b"x")], "holds no plugin binaries"),
}


def _hostile_tarball(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_hostile_tarball_fails_and_leaves_dest_untouched(server, dest, fetch, tmp_path, shape):
    """Each shape served as a release (with correct checksum files) over HTTP, over an install."""
    run(server, dest, fetch, tmp_path)
    before = snapshot(dest)
    version = f"6.6.{sorted(HOSTILE).index(shape)}"
    directory = server["root"] / f"v{version}"
    directory.mkdir(exist_ok=True)
    tarball = directory / f"cni-plugins-linux-{ARCH}-v{version}.tgz"
    members, message = HOSTILE[shape]
    _hostile_tarball(tarball, members)
    release_server.write_checksums(str(tarball))
    options = Options(dest=dest, version=version, arch=ARCH, base_url=server["base_url"])
    with pytest.raises(ReleaseError, match=rf"tarball http://127\.0\.0\.1:\d+/v{version}/\S+.*{message}"):
        ensure(options, fetch, str(tmp_path / "work"), False, Limits(member=4096, total=10000))
    assert snapshot(dest) == before
    assert os.listdir(tmp_path / "work") == []


def test_hostile_local_tarball(dest, fetch, tmp_path):
    tarball = tmp_path / "hostile.tgz"
    _hostile_tarball(tarball, HOSTILE["setuid"][0])
    with pytest.raises(ReleaseError, match=f"^unsafe tarball {tarball}: member './bridge' has the setuid or setgid bit$"):
        ensure(Options(dest=dest, src=str(tarball)), fetch, str(tmp_path), False)
    assert not os.path.exists(dest)


def test_not_a_tarball(server, dest, fetch, tmp_path):
    junk = tmp_path / "junk.tgz"
    junk.write_bytes(b"\x1f\x8b" + b"garbage" * 100)
    with pytest.raises(ReleaseError, match="is not a readable tar archive"):
        run(server, dest, fetch, tmp_path, version=None, src=str(junk))


def test_extras_are_not_installed(server, dest, fetch, tmp_path):
    run(server, dest, fetch, tmp_path)
    assert not {"LICENSE", "README.md"} & set(os.listdir(dest))


def test_options_take_every_option_the_installer_reads_from_the_spec_by_name():
    params = {name: spec.get("default") for name, spec in ARGUMENT_SPEC.all_options().items()}
    params.update(version="1.9.1", plugins=["bridge"], adopt_foreign=["tuning"], timeout=7, rename={"a": "b"})
    options = Options.from_params(params, "/opt/cni/bin", "x86_64")
    assert (options.version, options.plugins, options.adopt_foreign, options.timeout, options.rename) == \
        ("1.9.1", ("bridge",), ("tuning",), 7, {"a": "b"})
    assert (options.dest, options.machine, options.state) == ("/opt/cni/bin", "x86_64", "present")
    unset = Options.from_params(dict(params, plugins=None, adopt_foreign=None), "/d", "")
    assert (unset.plugins, unset.adopt_foreign) == (None, ())

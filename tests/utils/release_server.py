# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A local stand-in for the containernetworking/plugins release downloads.

Builds tarballs in the upstream layout (flat, members ``./``, ``./<plugin>``, ``./LICENSE``,
``./README.md``, named ``cni-plugins-linux-<arch>-v<version>.tgz`` with ``.sha256`` and
``.sha512`` beside them, under ``<root>/v<version>/``) from real plugin binaries, and serves a
directory over HTTP on 127.0.0.1 (or, for the simulated fleet, on the controller's address on
its test bridge). Used by the unit tests (imported) and by the integration
target (run as a script: ``release_server.py ROOT --release 1.1.1 --release 1.1.2:-sbr
--release 1.9.1@DIR --stand-in-flannel v1.9.1-flannel1 --port-file FILE``: ``@DIR`` serves the
real binaries of that release from DIR as they are, the other forms stand-ins made from the
distro's binaries).

``--stand-in-flannel VERSION`` also serves a release in flannel's layout,
``<root>/flannel/<version>/cni-plugin-flannel-linux-<arch>-<version>.tgz`` holding
``flannel-<arch>``, whose binary is the flannel STAND-IN of ``flannel_standin.py`` (not flannel:
flannel itself is packaged by no registry the tests reach)."""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import io
import os
import sys
import tarfile
import threading

import script_plugin

PLUGIN_SOURCE = "/usr/lib/cni"


def _add_file(archive: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 1700000000
    archive.addfile(info, io.BytesIO(data))


def build_release(root: str, version: str, arch: str, plugins: list | None = None,
                  source: str = PLUGIN_SOURCE, patch: dict | None = None) -> str:
    """Write the release tarball and its checksum files; return the tarball's path.

    ``plugins``: binaries of ``source`` to include (default all). ``patch``: name -> bytes
    appended to that binary, so two versions differ in content (Go binaries ignore trailing
    bytes, so the patched binary still runs)."""
    names = sorted(plugins if plugins is not None else os.listdir(source))
    directory = os.path.join(root, f"v{version}")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"cni-plugins-linux-{arch}-v{version}.tgz")
    # Fastest compression: the tests want the layout, not a small file.
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        root_entry = tarfile.TarInfo("./")
        root_entry.type = tarfile.DIRTYPE
        root_entry.mode = 0o755
        archive.addfile(root_entry)
        for name in names:
            with open(os.path.join(source, name), "rb") as handle:
                data = handle.read() + (patch or {}).get(name, b"")
            _add_file(archive, f"./{name}", data, 0o755)
        _add_file(archive, "./LICENSE", b"Apache License 2.0\n", 0o644)
        _add_file(archive, "./README.md", b"# CNI plugins\n", 0o644)
    write_checksums(path)
    return path


FLANNEL_STAND_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flannel_standin.py")


def stand_in_flannel_program(version: str) -> bytes:
    """The flannel stand-in (flannel_standin.py, not flannel), marked with a release version so
    that two releases' binaries differ, as a real upgrade's do."""
    return script_plugin.program(FLANNEL_STAND_IN) + f"# stand-in release {version}\n".encode()


def build_stand_in_flannel(root: str, version: str, arch: str) -> str:
    """A release in flannel's layout around the flannel stand-in; return the tarball's path."""
    directory = os.path.join(root, "flannel", version)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"cni-plugin-flannel-linux-{arch}-{version}.tgz")
    with tarfile.open(path, "w:gz") as archive:
        _add_file(archive, f"flannel-{arch}", stand_in_flannel_program(version), 0o755)
    write_checksums(path)
    return path


def write_checksums(path: str) -> None:
    """``<path>.sha256`` and ``<path>.sha512`` in sha256sum format."""
    with open(path, "rb") as handle:
        data = handle.read()
    for algorithm in ("sha256", "sha512"):
        digest = hashlib.new(algorithm, data).hexdigest()
        with open(f"{path}.{algorithm}", "w", encoding="ascii") as out:
            out.write(f"{digest}  {os.path.basename(path)}\n")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that hangs up mid-download (the size-cap tests do) is not an error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def start_server(root: str, address: str = "127.0.0.1") -> tuple:
    """Serve ``root`` on a free port of ``address`` from a daemon thread; return (server, base URL)."""
    handler = functools.partial(_QuietHandler, directory=root)
    server = _Server((address, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{address}:{server.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--arch", required=True)
    parser.add_argument("--release", action="append", default=[],
                        help="VERSION or VERSION:-plugin,-plugin (stand-ins made from the distro's binaries, "
                             "leaving those plugins out), or VERSION@DIR (the real binaries of that release in DIR)")
    parser.add_argument("--stand-in-flannel", action="append", default=[], metavar="VERSION",
                        help="a release in flannel's layout holding a stand-in program (not flannel)")
    parser.add_argument("--port-file", required=True, help="written with the port once serving")
    parser.add_argument("--address", default="127.0.0.1",
                        help="where to listen: loopback, or the controller's address on a test bridge")
    args = parser.parse_args()
    for spec in args.release:
        if "@" in spec:
            version, source = spec.split("@", 1)
            # The binaries only: an install dest also holds cnikit's manifest and memo.
            binaries = [name for name in sorted(os.listdir(source)) if not name.startswith(".")]
            build_release(args.root, version, args.arch, binaries, source=source)
            continue
        version, minus = (spec.split(":", 1) + [""])[:2]
        left_out = {name.lstrip("-") for name in minus.split(",") if name}
        plugins = [name for name in sorted(os.listdir(PLUGIN_SOURCE)) if name not in left_out]
        # Each version's binaries differ, as a real upgrade's do.
        build_release(args.root, version, args.arch, plugins, patch={name: version.encode() for name in plugins})
    for version in args.stand_in_flannel:
        build_stand_in_flannel(args.root, version, args.arch)
    server = start_server(args.root, args.address)[0]
    with open(args.port_file + ".tmp", "w", encoding="ascii") as out:
        out.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    threading.Event().wait()


if __name__ == "__main__":
    main()

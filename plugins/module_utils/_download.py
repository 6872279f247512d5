# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Checksums and downloads for the installer: every fetch goes through one size-capped read,
and every byte read is hashed on the way. Downloads use a ``fetch(url) -> readable`` callable
given by the caller, so the module can use Ansible's proxy and certificate handling and tests
can use urllib."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ._errors import ConfigError, ReleaseError

DIGESTS = ("sha256", "sha512")
CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Size caps, in bytes. The largest real release (v1.9.1 amd64) is about 50 MB packed and
    under 250 MB unpacked; the caps only stop runaway or hostile input."""

    download: int = 512 << 20
    member: int = 256 << 20
    total: int = 1 << 30
    checksum_file: int = 64 << 10
    # Seconds one download (connecting, the headers, every byte) may take: the module's
    # ``timeout``. A per-read timeout alone let a server sending a byte every 2 s hold a
    # ``timeout: 5`` install for minutes.
    seconds: float = math.inf


def mask_url(url: str) -> str:
    """The URL without its user:password, fit for messages and return values."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def url_password(url: str) -> str | None:
    """The password embedded in a URL, so the caller can keep it out of logs."""
    return urlsplit(url).password


# --- checksums -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Checksum:
    """``sha256:<hex>`` (pinned) or ``sha256:<url>`` (a checksum file to fetch)."""

    algorithm: str
    hexdigest: str | None = None
    url: str | None = None

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hexdigest or mask_url(self.url or '')}"


def parse_checksum(spec: str) -> Checksum:
    given, sep, value = str(spec).partition(":")
    algorithm = given.strip().lower()
    value = value.strip()
    if not sep or algorithm not in DIGESTS or not value:
        raise ConfigError("checksum", "must be sha256:<hex>, sha512:<hex>, sha256:<url> or sha512:<url>",
                          f"{given}{sep}{mask_url(value)}")
    if "://" in value:
        return Checksum(algorithm, url=value)
    return Checksum(algorithm, hexdigest=_valid_hex(value, algorithm, "checksum"))


def _valid_hex(value: str, algorithm: str, path: str) -> str:
    length = hashlib.new(algorithm).digest_size * 2
    if not re.fullmatch(rf"[0-9a-fA-F]{{{length}}}", value):
        raise ConfigError(path, f"not a {algorithm} digest ({length} hex digits)", value)
    return value.lower()


def _is_cleartext(url: str | None) -> bool:
    return urlsplit(url or "").scheme.lower() == "http"


class RedirectRecorder:
    """A ``fetch`` that remembers where each response finally came from (its ``geturl()``), so
    that an https URL a mirror redirects to plain http is known to have travelled in cleartext."""

    def __init__(self, fetch):
        self._fetch = fetch
        self.arrived_from = {}

    def __call__(self, url: str):
        response = self._fetch(url)
        final = response.geturl() if hasattr(response, "geturl") else url
        if final and final != url:
            self.arrived_from[url] = final
        return response


def cleartext_warning(url: str, checksum: Checksum, arrived_from: dict | None = None) -> str | None:
    """The warning a download deserves when anyone on the network path could swap what it
    installs: plain HTTP for the tarball or its checksum file, asked for or reached by a redirect
    (``arrived_from``: asked URL -> the URL the response came from), without a pinned digest (the
    served checksum then only proves that the same server sent both)."""
    if checksum.hexdigest:
        return None
    arrived_from = arrived_from or {}
    cleartext = []
    for asked in (u for u in (url, checksum.url) if u):
        final = arrived_from.get(asked, asked)
        if _is_cleartext(asked):
            cleartext.append(mask_url(asked))
        elif _is_cleartext(final):
            cleartext.append(f"{mask_url(asked)} (redirected to {mask_url(final)})")
    if not cleartext:
        return None
    return (f"{', '.join(cleartext)} travel(s) in cleartext and no checksum is pinned: anyone on "
            "the network path can replace the binaries this installs, and their checksum with them. Use https, or "
            "pin checksum: sha256:<digest> from a source you trust")


def parse_checksum_file(data: bytes, filename: str, algorithm: str, origin: str) -> str:
    """The digest for ``filename`` from ``sha256sum``-format text: the line naming it, or the
    only line there is (the release's files hold one line each)."""
    lines = [line.split() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    named = [fields[0] for fields in lines if len(fields) > 1 and fields[1].lstrip("*") == filename]
    if named:
        return _valid_hex(named[0], algorithm, origin)
    if len(lines) == 1:
        return _valid_hex(lines[0][0], algorithm, origin)
    raise ReleaseError(f"{origin}: no {algorithm} digest for {filename} in the checksum file")


def expected_digest(fetch, checksum: Checksum, filename: str, limits: Limits) -> str:
    """The pinned digest, or the one the checksum file at ``checksum.url`` gives for ``filename``."""
    if checksum.hexdigest:
        return checksum.hexdigest
    parts = []
    fetch_capped(fetch, checksum.url, limits.checksum_file, parts.append, limits.seconds)
    return parse_checksum_file(b"".join(parts), filename, checksum.algorithm, mask_url(checksum.url))


def verify_digest(actual: dict, algorithm: str, expected: str, what: str) -> None:
    if actual[algorithm] != expected:
        raise ReleaseError(f"checksum mismatch for {what}: expected {algorithm}:{expected}, "
                           f"got {algorithm}:{actual[algorithm]}")


# --- reading with a cap --------------------------------------------------------------------

def read_capped(readable, limit: float, sink, what: str, deadline: float = math.inf, seconds: float = math.inf) -> None:
    """Copy ``readable`` into ``sink`` (a callable taking chunks), failing past ``limit`` bytes,
    or once ``time.monotonic()`` passes ``deadline`` (``seconds`` after the start). ``read1``
    where the readable has it (an HTTP response does) returns whatever has arrived, so a trickle
    is seen as it trickles: a plain ``read`` waits for a whole chunk, however long it takes. An
    HTTP response's socket waits no longer than the time left: with the per-read timeout alone, a
    byte just before the deadline and then silence let a download take twice ``seconds``."""
    read = getattr(readable, "read1", readable.read)
    sock = _socket_of(readable)
    per_read = sock.gettimeout() if sock is not None else None
    seen = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _too_long(what, seconds, seen)
        # Asked again each time: once the body is all read, the response lets its socket go
        # (Python 3.13 closes it), and a closed socket's settimeout fails with EBADF.
        sock = _socket_of(readable)
        if sock is not None and left < math.inf:
            sock.settimeout(left if per_read is None else min(per_read, left))
        try:
            chunk = read(CHUNK)
        except socket.timeout:
            if time.monotonic() >= deadline:
                raise _too_long(what, seconds, seen) from None
            raise
        if not chunk:
            return
        seen += len(chunk)
        if seen > limit:
            raise ReleaseError(f"{what} is larger than the limit of {limit} bytes")
        if time.monotonic() > deadline:
            raise _too_long(what, seconds, seen)
        sink(chunk)


def _too_long(what: str, seconds: float, seen: int) -> ReleaseError:
    return ReleaseError(f"download of {what} took longer than timeout ({seconds:g} s): {seen} bytes had arrived when "
                        "the time ran out")


def _socket_of(readable) -> socket.socket | None:
    """The socket an ``http.client`` response reads from: its buffered reader's raw
    ``socket.SocketIO`` holds it (as ``_sock``; there is no public way to it). None for anything
    else (a local file, a gzip-decoding wrapper) and for a response whose body was all read."""
    raw = getattr(getattr(readable, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def fetch_capped(fetch, url: str, limit: float, sink, seconds: float = math.inf) -> None:
    """The one way anything is downloaded: ``fetch(url)`` read into ``sink`` up to ``limit``
    bytes, all of it (connecting and the headers too) within ``seconds``."""
    import http.client  # pylint: disable=import-outside-toplevel  # a converged install downloads nothing
    deadline = time.monotonic() + seconds
    try:
        with contextlib.closing(fetch(url)) as response:
            read_capped(response, limit, sink, mask_url(url), deadline, seconds)
    except (OSError, http.client.HTTPException) as exc:
        raise ReleaseError(f"download of {mask_url(url)} failed: {exc}") from exc


class _Hashers:
    """Every digest in ``names`` over the same bytes, fed chunk by chunk."""

    def __init__(self, names=DIGESTS):
        self._hashers = {name: hashlib.new(name) for name in names}

    def update(self, chunk: bytes) -> None:
        for hasher in self._hashers.values():
            hasher.update(chunk)

    def hexdigests(self) -> dict:
        return {name: hasher.hexdigest() for name, hasher in self._hashers.items()}


def _hashing_sink(handle, hashers: _Hashers):
    """A sink that writes each chunk to ``handle`` and feeds it to ``hashers``."""
    def sink(chunk):
        handle.write(chunk)
        hashers.update(chunk)
    return sink


def download(fetch, url: str, directory: str, limits: Limits = Limits()) -> tuple:
    """Stream ``url`` into a new file in ``directory``; return (path, {algorithm: hexdigest})."""
    hashers = _Hashers()
    fd, path = tempfile.mkstemp(prefix="cni-plugins-", suffix=".tgz", dir=directory)
    with os.fdopen(fd, "wb") as handle:
        fetch_capped(fetch, url, limits.download, _hashing_sink(handle, hashers), limits.seconds)
    return path, hashers.hexdigests()


def file_digests(path: str) -> dict:
    hashers = _Hashers()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            hashers.update(chunk)
    return hashers.hexdigests()


def copy_hashed(readable, path: str, what: str, limit: float = math.inf) -> str:
    """Copy into a new file at ``path``, flushed to disk; return the sha256 of what was written."""
    hashers = _Hashers(("sha256",))
    with open(path, "xb") as handle:
        read_capped(readable, limit, _hashing_sink(handle, hashers), what)
        handle.flush()
        os.fsync(handle.fileno())
    return hashers.hexdigests()["sha256"]

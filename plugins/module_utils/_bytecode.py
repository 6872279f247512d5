# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The compiled code of the collection's module_utils, kept on the managed node between tasks.

Ansible sends a module as a zip of sources, and Python keeps no bytecode for what it imports from
a zip: each task compiled every module_utils it imports (twice: zipimport, in Pythons 3.9 to 3.13,
compiles a file once only to learn its name), and that was most of what a converged task cost
beyond Ansible's own (docs/performance.md). Each module imports this file first. When the
module runs from that zip, it adds an import hook for the collection's module_utils that compiles
each one once and keeps its code in the user's cache directory, one file per module_utils and
Python version, in the format of Python's checked hash-based ``.pyc``: the code is used only while
the hash of the source in the zip is the one it was compiled from, so a changed source is compiled
again. Anything wrong with the directory (not the user's own, writable by others, read-only), or
``PYTHONDONTWRITEBYTECODE`` set, means compiling on every run, each file once.
"""

from __future__ import annotations

import _imp
import importlib.util
import marshal
import os
import sys
import zipimport

PACKAGE = __name__.rpartition(".")[0]
# The flags word of a checked hash-based .pyc (PEP 552): the code is valid for one source hash.
CHECKED_HASH_FLAGS = (0b11).to_bytes(4, "little")
HEADER = importlib.util.MAGIC_NUMBER + CHECKED_HASH_FLAGS


def cache_directory() -> str | None:
    """Where the code is kept: the user's cache directory (XDG), one directory per Python; None
    when it has no absolute path (a relative ``XDG_CACHE_HOME`` is ignored, as XDG says, and a
    user without a home would get one relative to the working directory)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cnikit", "bytecode", sys.implementation.cache_tag) if os.path.isabs(base) else None


def private_directory(path: str) -> bool:
    """Whether ``path`` is (made if missing) a directory of this user that no one else can write:
    code read from it runs as this user."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        status = os.stat(path)
    except OSError:
        return False
    return status.st_uid == os.geteuid() and not status.st_mode & 0o022


class CachingLoader:
    """The loader of one module_utils of the zip, its code kept in the file ``kept`` (if any)."""

    def __init__(self, origin: str, source: bytes, kept: str | None):
        self.origin = origin
        self.source = source
        self.kept = kept

    def create_module(self, _spec):
        return None  # the default module object

    def exec_module(self, module) -> None:
        exec(self.get_code(module.__name__), module.__dict__)  # pylint: disable=exec-used  # what a loader does with code

    def get_code(self, _fullname: str):
        if self.kept is None:
            return compile(self.source, self.origin, "exec", dont_inherit=True)
        source_hash = importlib.util.source_hash(self.source)
        try:
            with open(self.kept, "rb") as handle:
                data = handle.read()
            if data[:8] == HEADER and data[8:16] == source_hash:
                code = marshal.loads(data[16:])
                _imp._fix_co_filename(code, self.origin)  # pylint: disable=protected-access  # as importlib does for a .pyc: this payload's path
                return code
        except (OSError, ValueError, EOFError, TypeError):
            pass  # none kept yet, or unreadable: compiled below
        code = compile(self.source, self.origin, "exec", dont_inherit=True)
        keep(self.kept, HEADER + source_hash + marshal.dumps(code))
        return code

    def get_source(self, _fullname: str) -> str:
        return self.source.decode()  # tracebacks show the lines

    def get_filename(self, _fullname: str) -> str:
        return self.origin


def kept_path(directory: str, fullname: str) -> str:
    """The file keeping the code of module_utils ``fullname``."""
    return os.path.join(directory, fullname[len(PACKAGE) + 1:] + ".pyc")


def keep(path: str, data: bytes) -> None:
    """Write ``path`` whole or not at all (tasks of several forks may write it at once); a failure
    only means compiling again next time."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


class CachingFinder:
    """Finds the collection's module_utils in the zip (as zipimport would, without compiling them
    to do so) and gives each a CachingLoader."""

    def __init__(self, directory: str | None):
        self.directory = directory

    def find_spec(self, fullname: str, path=None, target=None):  # pylint: disable=unused-argument  # the finder protocol's
        if not fullname.startswith(PACKAGE + ".") or not path:
            return None
        leaf = fullname.rpartition(".")[2]
        for entry in path:
            try:
                archive = zipimport.zipimporter(entry)
            except zipimport.ZipImportError:
                return None  # not in a zip: Python's own finders
            for origin, package in ((f"{entry}/{leaf}.py", False), (f"{entry}/{leaf}/__init__.py", True)):
                try:
                    source = archive.get_data(origin)
                except OSError:
                    continue
                kept = kept_path(self.directory, fullname) if self.directory else None
                spec = importlib.util.spec_from_file_location(
                    fullname, origin, loader=CachingLoader(origin, source, kept),
                    submodule_search_locations=[origin.rpartition("/")[0]] if package else None)
                spec.cached = kept
                return spec
        return None


def install() -> None:
    """Add the hook, once, when this module was imported from a zip (a module's payload)."""
    if not isinstance(__loader__, zipimport.zipimporter):
        return
    if any(isinstance(finder, CachingFinder) for finder in sys.meta_path):
        return
    directory = None if sys.dont_write_bytecode else cache_directory()
    sys.meta_path.insert(0, CachingFinder(directory if directory and private_directory(directory) else None))


install()

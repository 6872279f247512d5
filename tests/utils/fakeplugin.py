# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test-double CNI plugin, modelled on libcni's ``noop`` test plugin.

Install it under any name (``FakePlugins``, or ``script_plugin.install``, into a temporary plugin
directory: ``noop``, ``noop2``, ``sleep``, ``portmap`` ...) and drive it with a JSON *debug file*.
Every call is appended to a JSON-lines log, so a test asserts exactly what the runtime sent.

Where the debug file is found, first match wins:

1. the config key ``debugFile`` on stdin;
2. ``DEBUG=<path>`` in ``CNI_ARGS``;
3. ``<path the plugin was run as>.debug.json`` (e.g. ``/tmp/p/noop.debug.json``), the only way
   for calls whose stdin carries no config (VERSION: ``{"cniVersion": "1.1.0"}``).

Without a debug file the plugin succeeds: ADD prints the prevResult (or a minimal result),
VERSION lists every version from 0.1.0 to 1.1.0, everything else prints nothing.

Debug file format (every key optional)::

    {
      "log": "/tmp/calls.jsonl",          # append one JSON line per call
      "log_env": ["FOO"],                  # also log these environment variables
      "ADD": {                             # one object per verb: ADD DEL CHECK GC STATUS VERSION
        "result": {...} | "PASSTHROUGH",   # printed on success; PASSTHROUGH = the prevResult
                                           #   (ADD's default is PASSTHROUGH, or
                                           #   {"cniVersion": <config version>} without one;
                                           #   other verbs print nothing unless given one)
        "error": {"code": 7, "msg": "...", "details": "..."},   # printed on stdout, exit 1
        "stdout": "raw text", "stderr": "raw text",            # printed verbatim
        "exit": 3,                         # exit status (default 0, 1 with "error")
        "ignore_sigterm": true,            # survive SIGTERM (only SIGKILL stops it)
        "sleep": 0.5,                      # seconds to sleep first
        "wait_for": "/tmp/go",             # first wait (at most 30 s) until this file exists
        "fork_sleep": 30,                  # fork a child that sleeps this long, holding stdout
        "signal": "SIGSEGV",               # kill itself with this signal (after sleeping)
        "supportedVersions": ["0.3.1", "0.4.0"]   # the VERSION answer (see below)
      }
    }

A verb may also hold a list of such objects: the first whose conditions hold applies (an
object without any always does). ``if_args`` is text that ``CNI_ARGS`` must contain,
``if_stdin`` text that stdin must: e.g. an ADD that fails when an address is requested with
``IP=`` and succeeds without.

``stdout`` replaces what would be printed; ``error`` wins over ``result``. A config
``cniVersion`` outside the supported versions (the verb's own ``supportedVersions``, else
VERSION's, else all) fails every verb but VERSION with code 1, as Go plugins do.

Log line: ``{"verb": "ADD", "plugin": "<name run as>", "env": {CNI_* vars present},
"stdin": <parsed stdin or the raw text>, "pid": <its pid>, "extra_env": {"FOO": "..."}}`` where
``extra_env`` holds the variables named in ``log_env`` (a list in the debug file).

Imported rather than run, the module offers ``FakePlugins``, which installs the script into a
plugin directory under several names with a sidecar debug file each and reads the shared log.
"""

import json
import os
import signal
import sys
import time

ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
CNI_VARS = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH")


def debug_path(config):
    if isinstance(config, dict) and config.get("debugFile"):
        return config["debugFile"]
    for item in os.environ.get("CNI_ARGS", "").split(";"):
        key, _sep, value = item.partition("=")
        if key == "DEBUG" and value:
            return value
    sidecar = os.path.abspath(sys.argv[0]) + ".debug.json"
    return sidecar if os.path.exists(sidecar) else None


def load_debug(path):
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def log_call(debug, verb, stdin_text, config):
    if not debug.get("log"):
        return
    entry = {
        "verb": verb,
        "plugin": os.path.basename(sys.argv[0]),
        "env": {k: os.environ[k] for k in CNI_VARS if k in os.environ},
        "stdin": config if config is not None else stdin_text,
        "pid": os.getpid(),
        "extra_env": {k: os.environ.get(k) for k in debug.get("log_env", [])},
    }
    with open(debug["log"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def choose(behaviour, stdin_text):
    if not isinstance(behaviour, list):
        return behaviour
    args = os.environ.get("CNI_ARGS", "")
    return next((b for b in behaviour if b.get("if_args", "") in args and b.get("if_stdin", "") in stdin_text), {})


def main():
    stdin_text = sys.stdin.read()
    try:
        config = json.loads(stdin_text) if stdin_text.strip() else None
    except ValueError:
        config = None
    verb = os.environ.get("CNI_COMMAND", "")
    debug = load_debug(debug_path(config))
    log_call(debug, verb, stdin_text, config)
    behaviour = choose(debug.get(verb, {}), stdin_text)
    supported = behaviour.get("supportedVersions") or debug.get("VERSION", {}).get("supportedVersions") or ALL_VERSIONS

    if behaviour.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if behaviour.get("wait_for"):
        deadline = time.monotonic() + 30
        while not os.path.exists(behaviour["wait_for"]) and time.monotonic() < deadline:
            time.sleep(0.01)
    if behaviour.get("sleep"):
        time.sleep(behaviour["sleep"])
    if behaviour.get("fork_sleep") and os.fork() == 0:
        time.sleep(behaviour["fork_sleep"])  # the child keeps stdout/stderr open
        os._exit(0)
    if behaviour.get("signal"):
        sig = getattr(signal, behaviour["signal"])
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(5)  # a signal that does not kill must not look like success

    version = (config or {}).get("cniVersion", "") if isinstance(config, dict) else ""
    error = behaviour.get("error")
    if error is None and verb != "VERSION" and verb and version not in supported:
        error = {"code": 1, "msg": "incompatible CNI versions",
                 "details": f'config is "{version}", plugin supports {supported}'}
    out = ""
    if error is not None:
        out = json.dumps(error, indent=4)
    elif verb == "VERSION":
        out = json.dumps({"cniVersion": supported[-1], "supportedVersions": supported}) + "\n"
    elif verb == "ADD":
        result = behaviour.get("result", "PASSTHROUGH")
        if result == "PASSTHROUGH":
            result = (config or {}).get("prevResult") or {"cniVersion": version}
        out = json.dumps(result, indent=4)
    elif behaviour.get("result") is not None:
        out = json.dumps(behaviour["result"])
    sys.stdout.write(behaviour.get("stdout", out))
    sys.stdout.flush()
    if "stderr" in behaviour:
        sys.stderr.write(behaviour["stderr"])
        sys.stderr.flush()
    return behaviour.get("exit", 1 if error is not None else 0)


class FakePlugins:
    """Installs this script into ``directory`` under several names, each driven by its sidecar
    debug file, all logging to ``<directory>/calls.jsonl``."""

    def __init__(self, directory):
        self.directory = str(directory)
        self.log = os.path.join(self.directory, "calls.jsonl")

    def path(self, name):
        return os.path.join(self.directory, name)

    def install(self, name, **verbs):
        """Symlink the script as ``name``; ``verbs`` are the debug file's per-verb objects."""
        os.makedirs(self.directory, exist_ok=True)
        if not os.path.lexists(self.path(name)):
            os.symlink(self._executable(), self.path(name))
        self.configure(name, **verbs)
        return self.path(name)

    def _executable(self):
        """The directory's one executable copy of this script, which every name links to (the
        repository's copy is not executable: see script_plugin). A dot file: no plugin name."""
        # Imported here: the installed copy runs alone, without tests/utils on its path.
        import script_plugin  # pylint: disable=import-outside-toplevel

        path = self.path(".fakeplugin")
        if not os.path.exists(path):
            script_plugin.install(__file__, path)
        return path

    def configure(self, name, **verbs):
        """Replace the behaviour of ``name``; keyword ``log_env`` lists extra variables to log."""
        debug = {"log": self.log}
        debug.update(verbs)
        with open(self.path(name) + ".debug.json", "w", encoding="utf-8") as handle:
            json.dump(debug, handle)

    def calls(self, verb=None):
        """The logged calls, oldest first, optionally of one verb."""
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as handle:
            entries = [json.loads(line) for line in handle if line.strip()]
        return [e for e in entries if verb is None or e["verb"] == verb]

    def clear(self):
        if os.path.exists(self.log):
            os.unlink(self.log)


if __name__ == "__main__":
    sys.exit(main())

# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Finding and running plugins (_exec) against the test-double plugin."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import fakeplugin
import pytest
import script_plugin

from ansible_collections.cnikit.cni.plugins.module_utils import _exec
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError, PluginError, PluginNotFoundError

FAKEPLUGIN = fakeplugin.__file__
ENV = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_NETNS": "/var/run/netns/x",
       "CNI_IFNAME": "eth0", "CNI_ARGS": "K=V", "CNI_PATH": "/a:/b"}
CONF = b'{"cniVersion":"1.0.0","name":"net","type":"noop"}'


def _probe(path: str) -> list:
    """The VERSION answer of the binary at ``path``, asked by an executor of its own."""
    return _exec.PluginExecutor([os.path.dirname(path)]).binary_versions(str(path))


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n", mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


# -- find_plugin ------------------------------------------------------------------------------

def test_find_plugin_takes_the_first_directory_in_order(tmp_path):
    first, second = _executable(tmp_path / "a" / "p"), _executable(tmp_path / "b" / "p")
    assert _exec.find_plugin("p", [str(tmp_path / "a"), str(tmp_path / "b")]) == str(first)
    assert _exec.find_plugin("p", [str(tmp_path / "b"), str(tmp_path / "a")]) == str(second)


def test_find_plugin_skips_non_executable_files_and_directories(tmp_path):
    _executable(tmp_path / "a" / "p", mode=0o644)
    (tmp_path / "b" / "p").mkdir(parents=True)
    good = _executable(tmp_path / "c" / "p")
    dirs = [str(tmp_path / d) for d in "abc"]
    assert _exec.find_plugin("p", dirs) == str(good)


def test_find_plugin_follows_symlinks(tmp_path):
    target = _executable(tmp_path / "real")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "p").symlink_to(target)
    assert _exec.find_plugin("p", [str(tmp_path / "bin")]) == str(tmp_path / "bin" / "p")


def test_find_plugin_not_found_names_plugin_and_path(tmp_path):
    (tmp_path / "a").mkdir()
    _executable(tmp_path / "a" / "p", mode=0o600)
    with pytest.raises(PluginNotFoundError) as info:
        _exec.find_plugin("p", [str(tmp_path / "a"), "/nonexistent"])
    assert str(info.value) == f"failed to find plugin \"p\" in path ['{tmp_path / 'a'}', '/nonexistent']"


@pytest.mark.parametrize("name", ["", "a/b", "../bridge", ".", "..", "a\\b", None])
def test_find_plugin_rejects_names_that_are_not_file_names(name):
    with pytest.raises(ConfigError) as info:
        _exec.find_plugin(name, ["/usr/lib/cni"])
    assert info.value.path == "type"


def test_find_plugin_needs_a_path():
    with pytest.raises(ConfigError, match="no plugin directories"):
        _exec.find_plugin("bridge", [])


# -- environment --------------------------------------------------------------------------------

def test_plugin_env_sets_all_six_variables_empty_when_unused():
    assert _exec.plugin_env("GC", ["/a", "/b"]) == {
        "CNI_COMMAND": "GC", "CNI_CONTAINERID": "", "CNI_NETNS": "", "CNI_IFNAME": "",
        "CNI_ARGS": "", "CNI_PATH": "/a:/b"}
    assert _exec.plugin_env("ADD", ["/a"], "c1", "/ns", "eth0", "K=V") == {
        "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_NETNS": "/ns", "CNI_IFNAME": "eth0",
        "CNI_ARGS": "K=V", "CNI_PATH": "/a"}


def test_run_plugin_passes_stdin_cni_vars_and_parent_env_overriding_inherited_cni_vars(fake, monkeypatch):
    path = fake.install("noop", log_env=["FOO"])
    monkeypatch.setenv("FOO", "BAR")
    monkeypatch.setenv("CNI_IFNAME", "inherited")
    monkeypatch.setenv("CNI_ARGS", "INHERITED=1")
    env = dict(ENV, CNI_ARGS="")
    _exec.run_plugin(path, env, CONF, timeout=10)
    (call,) = fake.calls()
    assert call["env"] == env
    assert call["extra_env"] == {"FOO": "BAR"}
    assert call["stdin"] == json.loads(CONF)


def test_run_plugin_returns_stdout(fake):
    path = fake.install("noop", ADD={"result": {"cniVersion": "1.0.0", "ips": []}})
    assert json.loads(_exec.run_plugin(path, ENV, CONF)) == {"cniVersion": "1.0.0", "ips": []}


# -- errors -------------------------------------------------------------------------------------

def test_error_json_on_stdout_becomes_a_plugin_error(fake):
    path = fake.install("noop", ADD={"error": {"code": 7, "msg": "bad config", "details": "key x"},
                                     "stderr": "some log"})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    err = info.value
    assert (err.plugin, err.verb, err.code, err.msg, err.details, err.exit_status) == \
        ("noop", "ADD", 7, "bad config", "key x", 1)
    assert str(err) == "plugin noop failed (ADD) [code 7]: bad config; key x (stderr: some log)"
    assert err.to_dict() == {"msg": str(err), "plugin": "noop", "verb": "ADD", "code": 7,
                             "details": "key x", "stderr": "some log", "exit_status": 1}


def test_error_json_without_message_names_the_exit_status(fake):
    path = fake.install("noop", DEL={"error": {"code": 11}, "exit": 2})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, dict(ENV, CNI_COMMAND="DEL"), CONF)
    assert info.value.code == 11
    assert info.value.msg == "no message (exit status 2)"


@pytest.mark.parametrize("code", ["7", True, None])
def test_error_code_that_is_not_an_integer_is_dropped(code):
    err = _exec.error_from_output("p", "ADD", json.dumps({"code": code, "msg": "m"}).encode(), b"", 1)
    assert err.code is None and err.msg == "m"


def test_garbage_stdout_is_quoted_with_stderr_and_exit_status(fake):
    path = fake.install("noop", ADD={"stdout": "panic: runtime error", "stderr": "goroutine 1", "exit": 2})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    assert info.value.msg == ("failed (exit status 2) and printed output that is not a CNI error: "
                              "panic: runtime error")
    assert info.value.stderr == "goroutine 1"
    assert info.value.code is None


def test_empty_stdout_falls_back_to_stderr_and_exit_status(fake):
    path = fake.install("noop", ADD={"stdout": "", "stderr": "cannot open netns\n", "exit": 3})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    assert str(info.value) == "plugin noop failed (ADD): cannot open netns (exit status 3)"
    assert info.value.exit_status == 3


def test_no_output_at_all_says_so(fake):
    path = fake.install("noop", ADD={"stdout": "", "exit": 4})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    assert str(info.value) == "plugin noop failed (ADD): failed with no error message (exit status 4)"


def test_death_by_signal_is_named(fake):
    path = fake.install("noop", ADD={"signal": "SIGSEGV"})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    assert info.value.msg == "failed with no error message (killed by signal SIGSEGV)"
    assert info.value.exit_status == -11


def test_death_by_a_signal_without_a_name_is_numbered():
    err = _exec.error_from_output("p", "DEL", b"", b"", -40)
    assert err.msg == "failed with no error message (killed by signal 40)"


def test_long_output_is_cut_in_the_error():
    err = _exec.error_from_output("p", "ADD", b"x" * 5000, b"", 1)
    assert err.msg.endswith("x" * _exec.OUTPUT_EXCERPT + "...")


def test_unexecutable_file_is_a_plugin_error(tmp_path):
    path = _executable(tmp_path / "p", text="no shebang, not an ELF\n")
    with pytest.raises(PluginError, match=r"cannot execute .*/p: Exec format error"):
        _exec.run_plugin(str(path), ENV, CONF)


# -- timeouts -----------------------------------------------------------------------------------

def _gone(pid: int) -> bool:
    """Whether ``pid`` is dead; a killed process closes its pipes a moment before it is a
    zombie, so allow it that moment."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def spawned(monkeypatch):
    """The processes run_plugin starts, so a test knows their pids even if one died early."""
    processes = []
    real_spawn = _exec._spawn  # pylint: disable=protected-access

    def spawn(path, env):
        processes.append(real_spawn(path, env))
        return processes[-1]

    monkeypatch.setattr(_exec, "_spawn", spawn)
    return processes


def test_hung_plugin_is_terminated_at_its_timeout(fake, spawned):
    path = fake.install("sleep", ADD={"sleep": 60})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF, timeout=0.5)
    assert info.value.msg == "timed out after 0.5s and was killed"
    assert info.value.exit_status == -15
    assert _gone(spawned[0].pid)


def test_plugin_that_ignores_sigterm_is_killed_after_the_grace_period(fake, monkeypatch, spawned):
    monkeypatch.setattr(_exec, "TERMINATE_GRACE", 0.3)
    path = fake.install("stubborn", ADD={"ignore_sigterm": True, "sleep": 60})
    # The timeout leaves the fake's interpreter time to start and ignore SIGTERM, even on a loaded
    # machine: a SIGTERM that comes before that kills it with -15, and the test would prove nothing.
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF, timeout=2.5)
    assert info.value.exit_status == -9
    assert _gone(spawned[0].pid)


def test_children_of_a_timed_out_plugin_are_killed_with_its_group(fake, spawned):
    # The plugin exits at once, but its child holds stdout open: the call can only end by the
    # timeout, and the child must not survive it.
    path = fake.install("forker", ADD={"fork_sleep": 300})
    outcome = []

    def call():
        try:
            _exec.run_plugin(path, ENV, CONF, timeout=0.5)
        except PluginError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    # Killing only the plugin would leave the call waiting for the child's end of the pipe.
    caller.join(30)
    assert not caller.is_alive(), "the call waited for the forked child"
    assert "timed out" in outcome[0].msg
    pgid = spawned[0].pid
    members = [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == pgid]
    assert all(_gone(int(p)) for p in members)


def test_a_shorter_deadline_is_kept_while_a_longer_one_is_watched(fake, spawned):
    """One watchdog thread serves every call: a call with a short timeout that starts while the
    thread sleeps towards a long deadline still ends at its own."""
    path = fake.install("sleep", ADD={"sleep": 60})
    outcomes = {}

    def call(name, timeout):
        started = time.monotonic()
        try:
            _exec.run_plugin(path, ENV, CONF, timeout=timeout)
        except PluginError as exc:
            outcomes[name] = (exc.msg, time.monotonic() - started)

    long_call = threading.Thread(target=call, args=("long", 3.0), daemon=True)
    long_call.start()
    time.sleep(0.3)  # the watchdog now sleeps until the long call's deadline
    call("short", 0.5)
    assert outcomes["short"][0] == "timed out after 0.5s and was killed"
    assert outcomes["short"][1] < 2.5, "the short call waited for the long call's deadline"
    long_call.join(30)
    assert outcomes["long"][0] == "timed out after 3s and was killed"
    assert all(_gone(p.pid) for p in spawned)


def test_plugin_calls_share_one_watchdog_thread(fake):
    path = fake.install("quick", ADD={"result": {"cniVersion": "1.0.0"}})
    for _call in range(5):
        _exec.run_plugin(path, ENV, CONF, timeout=30)
    watchdogs = [t for t in threading.enumerate() if t.name == "cnikit-plugin-watchdog"]
    assert len(watchdogs) == 1


def _pgid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (FileNotFoundError, ProcessLookupError):
        return None


# -- text file busy -----------------------------------------------------------------------------

def test_text_file_busy_is_retried_until_the_writer_closes(tmp_path):
    path = tmp_path / "busy"
    writer = open(path, "w", encoding="utf-8")  # pylint: disable=consider-using-with
    writer.write("#!/bin/sh\necho '{}'\n")
    writer.flush()
    path.chmod(0o755)
    threading.Timer(0.15, writer.close).start()
    assert _exec.run_plugin(str(path), ENV, CONF, timeout=10).strip() == b"{}"


def test_text_file_busy_gives_up_after_the_retries(monkeypatch):
    attempts, sleeps = [], []

    def busy(*args, **kwargs):
        attempts.append(args)
        raise OSError(errno.ETXTBSY, os.strerror(errno.ETXTBSY))

    monkeypatch.setattr(_exec.subprocess, "Popen", busy)
    monkeypatch.setattr(_exec.time, "sleep", sleeps.append)
    with pytest.raises(PluginError, match="cannot execute /x/p: Text file busy"):
        _exec.run_plugin("/x/p", ENV, CONF)
    assert len(attempts) == _exec.TEXT_BUSY_RETRIES + 1
    assert sleeps == [0.1 * 2 ** n for n in range(_exec.TEXT_BUSY_RETRIES)]


def test_other_exec_errors_are_not_retried(monkeypatch):
    attempts = []

    def denied(*args, **kwargs):
        attempts.append(args)
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(_exec.subprocess, "Popen", denied)
    with pytest.raises(PluginError, match="Permission denied"):
        _exec.run_plugin("/x/p", ENV, CONF)
    assert len(attempts) == 1


def test_spawn_returns_once_the_busy_spell_ends(monkeypatch):
    real_popen = subprocess.Popen
    failures = [OSError(errno.ETXTBSY, "busy")] * 2

    def flaky(*args, **kwargs):
        if failures:
            raise failures.pop()
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(_exec.subprocess, "Popen", flaky)
    monkeypatch.setattr(_exec.time, "sleep", lambda _s: None)
    process = _exec._spawn("/bin/true", {})  # pylint: disable=protected-access
    assert process.wait() == 0


# -- VERSION probe ------------------------------------------------------------------------------

def test_probe_sends_libcni_version_query(fake):
    path = fake.install("noop", VERSION={"supportedVersions": ["0.3.1", "0.4.0"]})
    assert _probe(path) == ["0.3.1", "0.4.0"]
    (call,) = fake.calls()
    assert call["env"] == {"CNI_COMMAND": "VERSION", "CNI_CONTAINERID": "", "CNI_NETNS": "dummy",
                           "CNI_IFNAME": "dummy", "CNI_ARGS": "", "CNI_PATH": "dummy"}
    assert call["stdin"] == {"cniVersion": "1.1.0"}


def test_probe_is_memoised_while_the_binary_is_unchanged(fake, tmp_path):
    path = tmp_path / "bin" / "copied"
    fake.install("noop")
    script_plugin.install(FAKEPLUGIN, path)
    fake.configure("copied", VERSION={"supportedVersions": ["1.0.0"]})
    executor = _exec.PluginExecutor([str(path.parent)])
    assert executor.supported_versions("copied") == ["1.0.0"]
    fake.configure("copied", VERSION={"supportedVersions": ["0.4.0"]})
    assert executor.binary_versions(str(path)) == ["1.0.0"]
    assert len(fake.calls("VERSION")) == 1
    path.write_text(path.read_text() + "\n# a new build\n")  # another size: another binary
    assert executor.supported_versions("copied") == ["0.4.0"]
    assert len(fake.calls("VERSION")) == 2
    assert _exec.PluginExecutor([str(path.parent)]).supported_versions("copied") == ["0.4.0"]
    assert len(fake.calls("VERSION")) == 3  # the memo is the executor's: another one asks again


@pytest.mark.parametrize("behaviour, expected", [
    ({"error": {"code": 4, "msg": "unknown CNI_COMMAND: VERSION"}}, ["0.1.0"]),
    ({"stdout": '{"cniVersion":"0.2.0"}'}, ["0.1.0", "0.2.0"]),
    ({"stdout": '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}'}, ["0.4.0", "1.0.0"]),
])
def test_probe_decodes_answers_as_libcni_does(fake, behaviour, expected):
    path = fake.install("noop", VERSION=behaviour)
    assert _probe(path) == expected


@pytest.mark.parametrize("stdout, message", [
    ("not json", "printed output that is not JSON: not json"),
    ('{"supportedVersions":["1.0.0"]}', "answer has no cniVersion"),
    ('{"cniVersion":"1.0.0"}', "answer has no supportedVersions list"),
    ('{"cniVersion":"1.0.0","supportedVersions":[1]}', "answer has no supportedVersions list"),
])
def test_probe_rejects_bad_answers(fake, stdout, message):
    path = fake.install("noop", VERSION={"stdout": stdout})
    with pytest.raises(PluginError, match=message) as info:
        _probe(path)
    assert info.value.verb == "VERSION"


def test_probe_reports_a_failing_plugin(fake):
    path = fake.install("noop", VERSION={"error": {"code": 999, "msg": "boom"}})
    with pytest.raises(PluginError, match=r"\[code 999\]: boom"):
        _probe(path)


# -- the test double itself (other suites rely on these ways of driving it) ----------------------

def test_fake_plugin_finds_its_debug_file_in_the_config_or_cni_args(fake, tmp_path):
    path = fake.install("noop")
    debug = tmp_path / "debug.json"
    debug.write_text(json.dumps({"log": fake.log, "ADD": {"result": {"cniVersion": "1.0.0", "from": "file"}}}))
    by_config = dict(json.loads(CONF), debugFile=str(debug))
    assert json.loads(_exec.run_plugin(path, ENV, json.dumps(by_config).encode()))["from"] == "file"
    by_args = dict(ENV, CNI_ARGS=f"IgnoreUnknown=1;DEBUG={debug}")
    assert json.loads(_exec.run_plugin(path, by_args, CONF))["from"] == "file"
    assert len(fake.calls("ADD")) == 2


def test_fake_plugin_passes_the_prev_result_through_by_default(fake):
    path = fake.install("noop")
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.250.0.5/24"}]}
    conf = json.dumps(dict(json.loads(CONF), prevResult=prev)).encode()
    assert json.loads(_exec.run_plugin(path, ENV, conf)) == prev
    assert json.loads(_exec.run_plugin(path, ENV, CONF)) == {"cniVersion": "1.0.0"}


def test_fake_plugin_refuses_a_config_version_it_does_not_support(fake):
    path = fake.install("noop", VERSION={"supportedVersions": ["0.3.1", "0.4.0"]})
    with pytest.raises(PluginError) as info:
        _exec.run_plugin(path, ENV, CONF)
    assert (info.value.code, info.value.msg) == (1, "incompatible CNI versions")


# -- binaries this host's C library cannot run ------------------------------------------------------

def test_binary_needing_a_newer_glibc_is_named_with_both_versions(tmp_path):
    # What the dynamic loader prints for Debian 12's plugins (glibc 2.32 and 2.34 symbols) on
    # Debian 11 (glibc 2.31): the binary's path is a staging directory's during an install.
    path = tmp_path / ".cnikit-stage-x" / "bridge"
    loader = "".join(f"{path}: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_{version}' not found (required by {path})\n"
                     for version in ("2.32", "2.34"))
    _executable(path, f"#!/bin/sh\ncat >&2 <<'END'\n{loader}END\nexit 1\n")
    with pytest.raises(PluginError) as caught:
        _probe(str(path))
    host = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    assert caught.value.msg == (f"the bridge binary needs glibc 2.34 or later and this host has glibc {host}: "
                                "install plugins built for this host's distribution (its package) or statically linked ones")


# -- which release a binary is ------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists(os.path.join(_exec.DISTRO_PACKAGE[1], "bridge")),
                    reason="needs the distro's CNI plugins in /usr/lib/cni")
def test_the_release_of_the_distro_binaries_asks_the_package_manager_once_through_the_runner():
    calls = []

    def run_command(argv):
        calls.append(argv)
        return 0, "1.1.1+ds1-3+b5", ""

    executor = _exec.PluginExecutor([_exec.DISTRO_PACKAGE[1]], run_command=run_command)
    assert (executor.release("bridge"), executor.release("host-local")) == ("1.1.1", "1.1.1")
    assert executor.binary_release(os.path.join(_exec.DISTRO_PACKAGE[1], "portmap")) == "1.1.1"
    assert calls == [["dpkg-query", "-W", "-f", "${Version}", "containernetworking-plugins"]]
    not_installed = _exec.PluginExecutor([_exec.DISTRO_PACKAGE[1]], run_command=lambda argv: (1, "", "not installed"))
    assert not_installed.release("bridge") is None
    assert _exec.PluginExecutor([_exec.DISTRO_PACKAGE[1]]).release("bridge") is None


@pytest.mark.parametrize("manifest_format", [1, 2])
def test_the_release_is_the_reference_sets_version_only(tmp_path, manifest_format):
    for name in ("bridge", "flannel", "portmap"):
        _executable(tmp_path / name, "#!/bin/sh\n")
    reference = {"version": "1.9.1", "source": "s", "tarball": {}, "plugins": None,
                 "files": {"bridge": "ab" * 32, "portmap": "cd" * 32}}
    if manifest_format == 1:
        manifest = {"format": 1, **reference}
    else:
        # A site's own portmap build in a set of its own is no reference release.
        reference["files"].pop("portmap")
        manifest = {"format": 2, "sets": {"reference": reference, "flannel": {
            "version": "v1.9.1-flannel1", "source": "s", "tarball": {}, "plugins": None, "files": {"flannel": "ef" * 32}},
            "site": {"version": "1.9.1", "source": "s", "tarball": {}, "plugins": None, "files": {"portmap": "01" * 32}}}}
    (tmp_path / ".cnikit-manifest.json").write_text(json.dumps(manifest))
    executor = _exec.PluginExecutor([str(tmp_path)])
    expected_portmap = "1.9.1" if manifest_format == 1 else None
    assert (executor.release("bridge"), executor.release("flannel"), executor.release("portmap")) == (
        "1.9.1", None, expected_portmap)


@pytest.mark.parametrize("recorded", ["sha256:" + "ab" * 32, "v1.9.1-flannel1", "1.1.1+ds1"])
def test_a_reference_set_version_that_is_no_release_says_no_release(tmp_path, recorded):
    """A source's content digest, or a label an install before the reference set took only
    release versions recorded (flannel's, a package's): neither is a release of the plugins."""
    _executable(tmp_path / "bridge", "#!/bin/sh\n")
    (tmp_path / ".cnikit-manifest.json").write_text(json.dumps({"format": 2, "sets": {"reference": {
        "version": recorded, "source": "s", "tarball": {}, "plugins": None, "files": {"bridge": "ab" * 32}}}}))
    assert _exec.PluginExecutor([str(tmp_path)]).release("bridge") is None


def test_an_unreadable_manifest_says_no_release(tmp_path):
    _executable(tmp_path / "bridge")
    (tmp_path / ".cnikit-manifest.json").write_text("{")
    assert _exec.PluginExecutor([str(tmp_path)]).release("bridge") is None


@pytest.mark.parametrize("entry", ["bin", "./bin", "", "opt/cni/bin"])
def test_a_relative_cni_path_entry_is_refused_naming_it(tmp_path, monkeypatch, entry):
    # Relative to the module's working directory, which is Ansible's, not the user's: a binary
    # planted there would run as root.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as refused:
        _exec.PluginExecutor(["/opt/cni/bin", entry])
    assert refused.value.path == "cni_path[1]" and refused.value.value == entry
    assert "must be an absolute path" in str(refused.value)


def test_task_with_a_relative_cni_path_entry_fails_before_anything_runs(tmp_path, monkeypatch):
    from stand_in_host import StandInHost, TaskFailed  # pylint: disable=import-outside-toplevel
    from ansible_collections.cnikit.cni.plugins.module_utils import _gc_task  # pylint: disable=import-outside-toplevel
    monkeypatch.chdir(tmp_path)
    given = {name: option.get("default") for name, option in _gc_task.ARGUMENT_SPEC.all_options().items()}
    given.update(conf_dir=str(tmp_path), cache_dir=str(tmp_path / "cache"), cni_path=["bin"])
    with pytest.raises((ConfigError, TaskFailed)) as refused:
        _gc_task.run(StandInHost(str(tmp_path)), given, {})
    assert "cni_path[0]" in str(refused.value)

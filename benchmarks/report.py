# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/performance.md from a benchmark run's results."""

from __future__ import annotations

import notes


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def plain(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def stats_row(label: str, stats: dict, fmt=seconds) -> str:
    return f"| {label} | {fmt(stats['median'])} | {fmt(stats['min'])} | {fmt(stats['max'])} | {stats['n']} |"


def stats_table(sides: dict, fmt=seconds, first_column: str = "side") -> list:
    lines = [f"| {first_column} | median | min | max | samples |", "|---|---:|---:|---:|---:|"]
    lines += [stats_row(label, stats, fmt) for label, stats in sides.items()]
    return lines


def ratio_text(ratio: dict) -> str:
    return f"**{ratio['median']:.2f}×** (min {ratio['min']:.2f}, max {ratio['max']:.2f}, {ratio['n']} pairs)"


def verdict(case: dict) -> str:
    if "met" not in case:
        return "—"
    return "**met**" if case["met"] else "**not met**"


def machine_section(results: dict) -> list:
    m = results["machine"]
    return [
        "## Machine", "",
        "A **shared 2-core VM**: other engineers ran their tests on it during the run, so absolute figures "
        "drift. Each case therefore measures its sides interleaved in one run (A, B, A, B, ...) and its ratios "
        "come from samples taken side by side; the load averages below show how busy the machine was.", "",
        "| item | value |", "|---|---|",
        f"| CPUs (`nproc`) | {m['nproc']} × {m['cpu']} |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| OS / kernel | {m['os']} / {m['kernel']} |",
        f"| Python (managed node and controller) | {m['python']} |",
        f"| ansible-core | {m['ansible_core']} |",
        f"| containernetworking-plugins (`dpkg-query -W`) | {m['plugins_package']} |",
        f"| commit | {m['commit']} |",
        f"| load average (1, 5, 15 min) before / after | {fmt_load(m['load_before'])} / {fmt_load(m['load_after'])} |",
        f"| run | {results['mode']}, {results['started']} to {results['finished']} |",
        "",
    ]


def fmt_load(load) -> str:
    return ", ".join(f"{v:.2f}" for v in load)


def summary_row(title: str, target: str, measured: str, case: dict) -> str:
    return f"| {title} | {target} | {measured} | {verdict(case)} |"


def summary_section(cases: dict) -> list:
    lines = ["## Summary", "", "| case | target | measured (median) | |", "|---|---|---|---|"]
    for name, (title, target, measured) in SUMMARIES.items():
        case = cases.get(name)
        if case is None:
            continue
        if "error" in case:
            lines.append(f"| {title} | {target} | failed to run: {case['error']} | **not measured** |")
        else:
            lines.append(summary_row(title, target, measured(case), case))
    return lines + [""]


def case_section(name: str, case: dict) -> list:
    title = SUMMARIES.get(name, (name,))[0]
    lines = [f"## {title}", "", notes.WHAT[name].strip(), ""]
    if "error" in case:
        return lines + [f"**Not measured**: the run failed: `{case['error']}`", ""]
    lines += DETAILS[name](case)
    lines += ["", notes.ANALYSIS[name](case).strip()]
    return lines + [""]


def engine_details(case: dict) -> list:
    return stats_table({"engine (`Engine.add` + `Engine.delete`)": case["sides"]["engine"],
                        "engine with `os.fsync` a no-op (analysis only)": case["sides"]["engine_no_fsync"],
                        "engine, tidied after every cycle (analysis only)": case["sides"]["engine_tidy"],
                        "plugins run directly with a timeout (analysis only)": case["sides"]["direct_timeout"],
                        "plugins run directly (floor)": case["sides"]["direct"]}) + [
        "", f"Per ADD+DEL cycle, {case['rounds']} rounds of {case['cycles_per_round']} cycles per side. Ratios of "
        f"the rounds' totals: engine / direct {ratio_text(case['ratio'])}; target ≤ {case['target']:.2f}: "
        f"{verdict(case)}. Engine without fsync / direct: {ratio_text(case['ratio_no_fsync'])}. Engine tidied "
        f"after every cycle / direct: {ratio_text(case['ratio_tidy'])}. Direct with a "
        f"timeout / direct: {ratio_text(case['ratio_timeout'])}. Engine / direct cycle by cycle (one ~30 ms "
        f"cycle against the next): {ratio_text(case['ratio_per_cycle'])}."]


def batch_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column=f"attach + detach {case['n']} namespaces")
    lines += ["", f"{case['rounds']} rounds. Loop / batch, side by side:", ""]
    lines += [f"- loop / {side}: {ratio_text(ratio)}" for side, ratio in case["ratios"].items()]
    return lines + ["", f"Target: the batch (default `parallel: 4`) ≥ {case['target']:.0f}× faster than the loop: "
                    f"{verdict(case)}. Whole playbook: {seconds(case['playbook_wall'])}."]


def converged_details(case: dict) -> list:
    lines = stats_table({"with CHECK (`run_check: true`, the default)": case["sides"]["check"],
                         "without CHECK (`run_check: false`)": case["sides"]["nocheck"],
                         "`ansible.builtin.ping` (the floor of any task)": case["sides"]["ping"]},
                        first_column=f"re-run of {case['n']} attachments in place")
    return lines + ["", f"Every re-run reported 0 changed. {case['rounds']} rounds; with / without CHECK: "
                    f"{ratio_text(case['ratio'])}; without CHECK / ping: {ratio_text(case['ratio_nocheck_ping'])}. "
                    f"Target: task wall time ≤ {case['target']} s: {verdict(case)}.", "",
                    "The module's own work, without Ansible (conf dir load and `converge_all` in one process, "
                    "same attachments, same rounds):", ""] + stats_table(
        {"with CHECK": case["in_process"]["in-process check"],
         "without CHECK": case["in_process"]["in-process nocheck"]}, first_column="in process")


def validation_details(case: dict) -> list:
    sides = case["sides"]
    warm = "validations per second (warm)"
    lines = ["| measure | median | min | max | samples |", "|---|---:|---:|---:|---:|",
             stats_row(warm, sides[warm], plain),
             stats_row("first validation in a new process (import + schema compilation)",
                       sides["first validation in a new process, s"])]
    return lines + ["", f"{case['n']} validations per round, {case['rounds']} rounds. "
                    f"Target ≥ {case['target']:,}/s: {verdict(case)}."]


def install_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column="`cni_plugin_install` task")
    first = case["first_install"]
    return lines + [
        "", f"First install: {seconds(first['seconds'])}, {first['bytes']:,} bytes downloaded. "
        f"The {case['rounds']} no-op re-runs together: {case['noop_requests']} requests, {case['noop_bytes']} bytes "
        f"served (counted by the test server), {'a change reported' if case['noop_changed'] else '0 changed'}. "
        f"Forced / no-op: {ratio_text(case['ratio'])}. Target (nothing downloaded, no change): {verdict(case)}.",
        "", "Parts of a no-op re-run, timed in process on the installed binaries:", ""] + stats_table(
        case["noop_breakdown"], first_column="work")


def scaling_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column="attach + detach, per attachment")
    lines += ["", "Marginal cost of each further attachment (the difference of the task times over the "
              "difference of sizes, per round), which excludes the task's fixed cost:", ""]
    lines += stats_table(case["marginal"], first_column="attachments")
    return lines + ["", f"{case['rounds']} rounds, batch task with the default `parallel: 4`. "
                    f"{case['ratio_label']}: {ratio_text(case['ratio'])}; target ≤ {case['target']:.2f} (flat): "
                    f"{verdict(case)}."]


def imports_details(case: dict) -> list:
    lines = ["| import (after `ansible.module_utils.basic`) | median | min | max | samples | pulls in |",
             "|---|---:|---:|---:|---:|---|"]
    for target, stats in case["sides"].items():
        heavy = ", ".join(case["heavy"][target]) or "—"
        lines.append(f"{stats_row(f'`{target}`', stats)} {heavy} |")
    basic = case["basic"]
    return lines + ["", f"`ansible.module_utils.basic` itself, which every module pays first: {seconds(basic['median'])} "
                    f"(min {seconds(basic['min'])}, max {seconds(basic['max'])}, {basic['n']} samples). "
                    f"{case['rounds']} rounds; each import in a fresh interpreter, timed inside it "
                    "(interpreter start-up excluded)."]


def fleet_details(case: dict) -> list:
    lines = ["| converged task | one host | × ping | all hosts at once | × ping | CPU on one host | × ping |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for task, one in case["per_task"]["one"].items():
        every, cpu = case["per_task"]["all"][task], case["cpu"][task]
        ratios = [case["ratios"][scope].get(task) for scope in ("one", "all", "cpu")]
        cells = [f"{r['median']:.2f}" if r else "1" for r in ratios]
        lines.append(f"| `{task}` | {seconds(one['median'])} | {cells[0]} | {seconds(every['median'])} | {cells[1]} | "
                     f"{seconds(cpu['median'])} | {cells[2]} |")
    lines += ["", f"Task wall times (medians of {case['rounds']} rounds; a task's time runs from its start to its last "
              f"host's result), on one host and on {case['hosts']} hosts with {case['hosts']} forks; `× ping` is the "
              f"median ratio to the `ansible.builtin.ping` task of the same round. `cni_attach` converges "
              f"{case['namespaces']} namespaces per host. CPU on one host: every process of the first host (sshd, "
              f"the shell, the module) during a playbook of that task alone, {case['rounds']} rounds, tasks rotated. "
              f"Target: a converged task at most {case['target']}× a ping task on the same host, in wall and CPU "
              f"time: {verdict(case)} (worst on one host: {case['worst']:.2f}× in wall time, "
              f"{case['worst_cpu']:.2f}× in CPU). "
              f"Building the {case['hosts']} hosts took {case['build_seconds']} s.", "",
              f"Wall time as hosts grow at {case['forks']} forks (medians of {case['rounds']} rounds):", "",
              "| hosts | " + " | ".join(f"`{t}`" for t in case["growth"]) + " |",
              "|---:|" + "---:|" * len(case["growth"])]
    for k in case["counts"]:
        lines.append(f"| {k} | " + " | ".join(seconds(case["growth"][t][str(k)]["median"]) for t in case["growth"]) + " |")
    return lines


def payload_details(case: dict) -> list:
    lines = ["| converged task's payload | wall | × ping | CPU | × ping | payload size |",
             "|---|---:|---:|---:|---:|---:|"]
    for task, sides in case["sides"].items():
        cells = [f"{case['ratios'][m][task]['median']:.2f}" if task in case["ratios"][m] else "1" for m in ("wall", "cpu")]
        lines.append(f"| `{task}` | {seconds(sides['wall']['median'])} | {cells[0]} | {seconds(sides['cpu']['median'])} | "
                     f"{cells[1]} | {case['sizes'][task] // 1024} KiB |")
    return lines + ["", f"Medians of {case['rounds']} rounds, the payloads in an order rotated every round; `× ping` is "
                    f"the median ratio to ping's payload of the same round. `cni_attach` converges {case['namespaces']} "
                    f"namespaces. Target: every payload at most {case['target']}× ping's in CPU time: {verdict(case)} "
                    f"(worst {case['worst']:.2f}× in CPU, {case['worst_wall']:.2f}× in wall time)."]


def attach40_details(case: dict) -> list:
    labels = {"tasks": "two batched `cni_attach` tasks (attach, detach; `parallel: 4`)",
              "ping x2": "two `ansible.builtin.ping` tasks (Ansible's floor for two tasks)",
              "plain loop": "the plugins in a plain sequential loop (ADD all, then DEL all)",
              "in process p4": "the module's own work in process (`converge_all`, `parallel: 4`)",
              "in process p1": "the same with `parallel: 1`"}
    lines = stats_table({labels[side]: stats for side, stats in case["sides"].items()},
                        first_column=f"attach + detach {case['n']} namespaces")
    return lines + ["", f"{case['rounds']} rounds, sides interleaved round by round. Tasks / plain loop: "
                    f"{ratio_text(case['ratio'])}; target ≤ {case['target']}: {verdict(case)}. In process "
                    f"(`parallel: 4`) / plain loop: {ratio_text(case['ratio_in_process'])}; `parallel: 1` / plain "
                    f"loop: {ratio_text(case['ratio_p1'])}. Tasks minus in-process work: "
                    f"{seconds(case['overhead']['median'])}. Beyond Ansible's floor (tasks minus two pings) / "
                    f"plain loop: {ratio_text(case['ratio_beyond_floor'])}; target ≤ 1 (issue 22): "
                    f"{'**met**' if case['ratio_beyond_floor']['median'] <= 1 else '**not met**'}."]


def routes_details(case: dict) -> list:
    lines = ["| reconcile | wall median | min | max | CPU median | samples |", "|---|---:|---:|---:|---:|---:|"]
    for label, stats in case["sides"].items():
        wall, cpu = stats["wall"], stats["cpu"]
        lines.append(f"| {label} | {seconds(wall['median'])} | {seconds(wall['min'])} | {seconds(wall['max'])} | "
                     f"{seconds(cpu['median'])} | {wall['n']} |")
    big = case["sizes"][-1]
    fast = case["reconcile_big"]["median"] < case["target"]
    linear = case["ratio"]["median"] <= case["growth_target"]
    return lines + ["", f"{case['rounds']} rounds, sizes in a rotated order each round. The reconcile of {big:,} "
                    f"routes from empty (in process): {seconds(case['reconcile_big']['median'])}; target under "
                    f"{seconds(case['target'])}: {'**met**' if fast else '**not met**'}. {case['ratio_label']}: "
                    f"{ratio_text(case['ratio'])}; target ≤ {case['growth_target']:.2f} (linear): "
                    f"{'**met**' if linear else '**not met**'}. The whole module process at {big:,} routes from "
                    f"empty: {seconds(case['module_big']['median'])}."]


def routed_details(case: dict) -> list:
    sides = case["sides"]
    labels = {"role": "the role, converged", "ping": f"{case['ping_count']} `ansible.builtin.ping` tasks",
              "empty": "an empty play (ansible-playbook's start-up)"}

    def cell(stats: dict) -> str:
        return f"{seconds(stats['median'])} ({seconds(stats['min'])} to {seconds(stats['max'])})"

    lines = ["| playbook run | task times (sum) | whole run | controller CPU | hosts' CPU |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {labels[side]} | " + " | ".join(cell(sides[side][key]) for key in
                                                  ("task_seconds", "wall", "controller_cpu", "hosts_cpu")) + " |"
              for side in sides]
    lines += ["", f"Medians (min to max) of {case['rounds']} rounds on {case['hosts']} hosts, {case['hosts']} forks; "
              f"each sample is one `ansible-playbook` run. Role / ping, side by side:", "",
              f"- task times: {ratio_text(case['ratio'])}; target ≤ {case['target']}: {verdict(case)}",
              f"- CPU, controller and hosts, beyond the empty play: {ratio_text(case['ratio_cpu'])}",
              f"- whole run, beyond the empty play: {ratio_text(case['ratio_wall_beyond_empty'])}", "",
              "The role's tasks in its converged runs (each one's time from its start to its last host's result; "
              "`where` says where its work runs):", "",
              "| task | action | where | median | min | max |", "|---|---|---|---:|---:|---:|"]
    for name, stats in case["per_task"].items():
        where = "controller" if stats["action"] in notes.CONTROLLER_ACTIONS else "each host"
        lines.append(f"| {name.split(' : ', 1)[-1]} | `{stats['action']}` | {where} | {seconds(stats['median'])} | "
                     f"{seconds(stats['min'])} | {seconds(stats['max'])} |")
    return lines


SUMMARIES = {
    "engine": ("1. Engine overhead", "engine / direct ≤ 1.10",
               lambda c: f"{c['ratio']['median']:.3f}× ({seconds(c['sides']['engine']['median'])} vs "
                         f"{seconds(c['sides']['direct']['median'])} per cycle)"),
    "batch": ("2. Batch vs loop", "batch ≥ 10× faster",
              lambda c: f"{c['ratio']['median']:.1f}× ({seconds(c['sides'][c['default_side']]['median'])} vs "
                        f"{seconds(c['sides']['loop']['median'])})"),
    "converged": ("3. Converged re-run", "≤ 1.5 s, 0 changed",
                  lambda c: f"{seconds(c['sides']['check']['median'])} with CHECK, "
                            f"{seconds(c['sides']['nocheck']['median'])} without; 0 changed"),
    "validation": ("4. Validation", "≥ 2,000 conflists/s",
                   lambda c: f"{plain(c['sides']['validations per second (warm)']['median'])}/s"),
    "install": ("5. Install re-run", "0 bytes downloaded",
                lambda c: f"{c['noop_bytes']} bytes, {seconds(c['sides']['no-op re-run']['median'])}"),
    "scaling": ("6. Scaling", "flat per attachment (≤ 1.20× from 50 to 200)",
                lambda c: f"{c['ratio']['median']:.2f}×"),
    "imports": ("Import cost on the managed node", "—", lambda c: "see section"),
    "fleet": ("7. Fleet", "converged task ≤ 1.25× ping on the same host",
              lambda c: f"{c['worst']:.2f}× in wall time, {c['worst_cpu']:.2f}× in the host's CPU (worst task, one host)"),
    "payload": ("7b. The payload's own run", "converged task's payload ≤ 1.25× ping's, in CPU time",
                lambda c: f"{c['worst']:.2f}× in CPU, {c['worst_wall']:.2f}× in wall time (worst task)"),
    "attach40": ("8. Batched tasks vs plain loop", "≤ 1.5× the plugins in a plain loop",
                 lambda c: f"{c['ratio']['median']:.2f}× ({seconds(c['sides']['tasks']['median'])} vs "
                           f"{seconds(c['sides']['plain loop']['median'])})"),
    "routes": ("9. Routes", "1,000 peers' routes under 1 s, linear",
               lambda c: f"{seconds(c['reconcile_big']['median'])} for {c['sizes'][-1]:,} "
                         f"({seconds(c['module_big']['median'])} as a whole module process); "
                         f"{c['ratio']['median']:.2f}× per route from {c['sizes'][-2]:,} to {c['sizes'][-1]:,}"),
    "routed": ("10. Routed network", "converged role ≤ 1.5× as many pings on the same hosts",
               lambda c: f"{c['ratio']['median']:.2f}× in task time, {c['ratio_cpu']['median']:.2f}× in CPU "
                         f"({c['ping_count']} tasks, {c['hosts']} hosts)"),
}
DETAILS = {
    "engine": engine_details, "batch": batch_details, "converged": converged_details,
    "validation": validation_details, "install": install_details, "scaling": scaling_details,
    "imports": imports_details, "fleet": fleet_details, "payload": payload_details, "attach40": attach40_details, "routes": routes_details,
    "routed": routed_details,
}


def run_note(results: dict) -> list:
    """For a section measured alone: when, where and under what load."""
    m = results["machine"]
    return [f"_Measured in a {results['mode']} run of this case alone, {results['started']} to {results['finished']}, "
            f"commit {m['commit']}, load average {fmt_load(m['load_before'])} before and "
            f"{fmt_load(m['load_after'])} after._", ""]


def update(existing: str, results: dict) -> str:
    """``existing`` with the sections and summary rows of the cases in ``results`` replaced (or
    added), the other cases' left as they were measured."""
    text = existing
    for name, case in results["cases"].items():
        title = SUMMARIES[name][0]
        section = "\n".join(case_section(name, case)[:-1] + [""] + run_note(results))
        start = text.find(f"\n## {title}\n")
        if start < 0:
            text = text.rstrip("\n") + "\n\n" + section
        else:
            end = text.find("\n## ", start + 1)
            text = text[:start + 1] + section + (text[end + 1:] if end >= 0 else "")
        row = summary_section({name: case})[-2]
        lines = text.split("\n")
        at = next((i for i, line in enumerate(lines) if line.startswith(f"| {title} |")), None)
        if at is None:
            at = lines.index("## Summary") + 4
            while lines[at].startswith("|"):
                at += 1
            lines.insert(at, row)
        else:
            lines[at] = row
        text = "\n".join(lines)
    return text.rstrip("\n") + "\n"


def render(results: dict) -> str:
    lines = ["# Performance", "", notes.INTRO.strip(), ""]
    lines += machine_section(results)
    lines += summary_section(results["cases"])
    for name, case in results["cases"].items():
        lines += case_section(name, case)
    return "\n".join(lines).rstrip() + "\n"

# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A pass-through CNI plugin that records when each call started and ended, so a test can
prove which calls ran at the same time. Each call appends one JSON line to the file named by
the config key ``intervalLog``: verb, container ID, parent pid (the runtime process), start and
end (wall clock, comparable across processes). ``holdSeconds`` keeps each call busy that long,
widening the window in which an overlap would show. ADD prints the prevResult (or a bare result
at the config's version); other verbs print nothing."""

import json
import os
import sys
import time


def main():
    start = time.time()
    config = json.loads(sys.stdin.read())
    verb = os.environ.get("CNI_COMMAND", "")
    if verb == "VERSION":
        print(json.dumps({"cniVersion": "1.0.0", "supportedVersions": ["0.3.1", "0.4.0", "1.0.0"]}))
        return 0
    time.sleep(config.get("holdSeconds", 0))
    if verb == "ADD":
        print(json.dumps(config.get("prevResult") or {"cniVersion": config["cniVersion"]}))
    record = {"verb": verb, "cid": os.environ.get("CNI_CONTAINERID", ""), "ppid": os.getppid(),
              "start": start, "end": time.time()}
    with open(config["intervalLog"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

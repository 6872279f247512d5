#!/usr/bin/env bash
# ansible-lint as galaxy-importer calls it, timed: the build stage (scripts/test.sh, galaxy_import)
# puts this first on the importer's PATH under the name ansible-lint. It runs
# $CNIKIT_REAL_ANSIBLE_LINT with the importer's arguments, its output and exit status unchanged,
# and writes "<wall> <user CPU> <system CPU>" seconds (the linter's child processes included) to
# $CNIKIT_LINT_TIMES.
set -u
TIMEFORMAT='%R %U %S'
# time reports on the group's stderr (the file); the linter's own stderr goes to the importer (fd 3).
{ time "$CNIKIT_REAL_ANSIBLE_LINT" "$@" 2>&3; } 3>&2 2>"$CNIKIT_LINT_TIMES"

#!/bin/sh
# Prints the build ID make embeds in agent builds: `git describe` of HEAD,
# and when the work tree differs from it, "-dirty-" and a short hash of the
# difference (tracked changes and untracked files), so two builds of
# different uncommitted sources never share an ID.
set -eu
id=$(git describe --tags --always 2>/dev/null || echo nogit)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  sum=$({ git diff HEAD 2>/dev/null; git ls-files --others --exclude-standard -z 2>/dev/null | xargs -0 -r cat 2>/dev/null; } | sha256sum | cut -c1-8)
  id="$id-dirty-$sum"
fi
echo "$id"

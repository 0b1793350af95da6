#!/usr/bin/env bash
# Checks the package packaging/build-deb.sh built: unpacks it into a scratch
# root (dpkg -x, nothing installed) and runs latscope and every compatibility
# name from there, and checks that the package holds a man page per
# subcommand and per compatibility name, and the completion scripts.
# Usage: packaging/check-deb.sh [PACKAGE.deb]  (default: the newest one built)
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "check-deb: $*" >&2
  exit 1
}

if [ $# -ge 1 ]; then
  deb=$1
else
  target_dir=$(cargo metadata --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  deb=$(ls -t "$target_dir"/debian/latscope_*.deb 2>/dev/null | head -n 1 || true)
  [ -n "$deb" ] || fail "no package in $target_dir/debian: run packaging/build-deb.sh first"
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
contents=$(dpkg -c "$deb")
has() { grep -q -- " \./$1\( \|$\)" <<<"$contents" || fail "$deb lacks /$1"; }

latscope="$root/usr/bin/latscope"
version=$("$latscope" --version) || fail "latscope --version failed"
[[ $version == "latscope "* ]] || fail "latscope --version printed '$version'"

# A man page per subcommand, listed by the packaged binary's own help.
help=$("$latscope" --help) || fail "latscope --help failed"
subcommands=$(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ && $1 != "help" { print $1 }' <<<"$help")
[ -n "$subcommands" ] || fail "latscope --help lists no subcommand"
has usr/share/man/man1/latscope.1.gz
for sub in $subcommands; do
  has "usr/share/man/man1/latscope-$sub.1.gz"
  page=$(zcat "$root/usr/share/man/man1/latscope-$sub.1.gz")
  grep -q '^\.TH LATSCOPE-' <<<"$page" || fail "latscope-$sub.1.gz is no man page"
done
has usr/share/bash-completion/completions/latscope
has usr/share/zsh/vendor-completions/_latscope
has usr/share/fish/vendor_completions.d/latscope.fish

# Every compatibility name (one page each) is a link that runs its subcommand:
# invoked through the link, --help is the subcommand's help (with no
# dispatch on the name it would be latscope's own, listing subcommands).
compat="$root/usr/lib/latscope/compat"
names=$(cd "$compat/man/man1" && ls -- *.1.gz | sed 's/\.1\.gz$//')
[ "$(wc -w <<<"$names")" -ge 10 ] || fail "expected 10 compatibility man pages, found: $names"
for name in $names; do
  [ -L "$compat/$name" ] || fail "/usr/lib/latscope/compat/$name is not a link"
  # (A Go program, as cnf-tests' runners are, prints its usage on stderr.)
  help=$("$compat/$name" --help 2>&1) || fail "$name --help failed"
  if [ "$name" = hwlatdetect ]; then
    # hwlatdetect's usage, as Python's argparse prints it.
    grep -q "^usage: hwlatdetect " <<<"$help" || fail "$name --help shows no usage of $name"
  elif [ "$name" = cyclictest ] || [ "$name" = cyclicdeadline ] || [ "$name" = oslat ] || [ "$name" = ptsematest ] || [ "$name" = signaltest ] || [ "$name" = pi_stress ] || [ "$name" = rt-migrate-test ]; then
    # The tool's own usage, as rt-tests prints it (not clap's;
    # rt-migrate-test's ends in ` [NR_TASKS]`).
    grep -q "^$name <options>\( \[NR_TASKS\]\)\?$" <<<"$help" || fail "$name --help shows no usage of $name"
  elif [[ $name == *-runner ]]; then
    # cnf-tests' runners are Go programs: the flag package's usage names
    # the program as it was invoked (`Usage of /path/oslat-runner:`).
    grep -q "^Usage of \(.*/\)\?$name:$" <<<"$help" || fail "$name --help shows no Go usage of $name"
  else
    grep -q "^Usage: $name " <<<"$help" || fail "$name --help shows no usage line of $name"
  fi
  ! grep -q "^Commands:" <<<"$help" || fail "$name --help is latscope's top-level help: argv[0] dispatch failed"
done
# cyclictest is the lean drop-in binary, which hands --latscope-json to the
# packaged /usr/bin/latscope (found as ../../bin/latscope from where it is).
[ "$(readlink "$compat/cyclictest")" = ../latscope-cyclictest ] || fail "compat/cyclictest does not run /usr/lib/latscope/latscope-cyclictest"
report="$root/cyclictest-report.json"
"$compat/cyclictest" -q -l 5 --latscope-json "$report" >/dev/null 2>&1 || fail "cyclictest --latscope-json failed"
grep -q '"test": "cyclictest"' "$report" || fail "cyclictest --latscope-json wrote no cyclictest Report"
help=$("$compat/pmqtest" --help)
[[ ${help%%$'\n'*} == *"replaces pmqtest"* ]] || fail "pmqtest --help is not latscope mq's help"
# ptsematest's own usage (its getopt table comes first), then its run is
# latscope mutex's: the rt-tests JSON layout of a short run.
json="$root/ptsematest.json"
"$compat/ptsematest" -l 5 -i 1000 -q --json="$json" >/dev/null 2>&1 || fail "ptsematest -l 5 failed"
grep -q '"receiver"' "$json" || fail "ptsematest --json wrote no rt-tests pair layout"

# `man pmqtest` finds the compatibility page exactly when the compat
# directory is first in PATH (man-db looks in DIR/man for each DIR of PATH).
if command -v man >/dev/null 2>&1; then
  page=$(env -u MANPATH PATH="$compat:$PATH" man -w pmqtest) || fail "man -w pmqtest failed"
  [ "$page" = "$compat/man/man1/pmqtest.1.gz" ] || fail "with the compat directory first in PATH, man pmqtest shows $page"
fi
# The control data and the copyright file: a synopsis that fits 80 columns,
# bash-completion recommended (it loads the completion script), the license.
# No pipe into head: under pipefail, dpkg-deb killed by SIGPIPE when head
# exits first (a loaded machine) would end this script with 141.
description=$(dpkg-deb -f "$deb" Description)
synopsis=${description%%$'\n'*}
[ "${#synopsis}" -lt 80 ] || fail "the synopsis is ${#synopsis} characters: $synopsis"
[[ $(dpkg-deb -f "$deb" Recommends) == *bash-completion* ]] || fail "the package does not recommend bash-completion"
grep -qx 'License: MIT or Apache-2.0' "$root/usr/share/doc/latscope/copyright" || fail "the copyright file names no license"
echo "check-deb: $(basename "$deb") ok: $version, $(wc -w <<<"$subcommands") subcommand man pages, compatibility names: $(echo $names)"

#!/usr/bin/env bash
# Runs the release workflow's build steps as the workflow has them (every `run: bash .ci/…` line
# of its build job, with this machine's target for `${{ matrix.target }}`), then checks what they
# made as a user who downloads the release would: the sums verify, the tarball holds the files
# README promises, its binary runs and diagnoses, its man page and completions are the binary's
# own. A workflow step that calls a script wrongly, or a script that packs the wrong thing, fails
# here before a tag does.
set -euo pipefail
cd "$(dirname "$0")/.."
triple=$(rustc -vV | sed -n 's/^host: //p')
version=ci
steps=$(sed -n '/^  build:/,/^  [a-z-]*:$/p' .github/workflows/release.yml \
  | sed -n 's/^ *run: \(bash \.ci\/.*\)$/\1/p')
[ "$(printf '%s\n' "$steps" | grep -c .)" -ge 2 ] \
  || { echo "release.sh: the build job has no 'run: bash .ci/…' steps: $steps" >&2; exit 1; }
while IFS= read -r step; do
  step=${step//'${{ matrix.target }}'/$triple}
  step=${step//'"$GITHUB_REF_NAME"'/$version}
  step=${step//'${GITHUB_REF_NAME}'/$version}
  case "$step" in *'${{'*|*GITHUB_*) echo "release.sh: cannot run '$step' here" >&2; exit 1 ;; esac
  echo "== release step: $step"
  $step
done <<< "$steps"

name="gpuwatch-$version-$triple"
sha256sum -c "$name.sha256"
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$name.tar.gz" "$name.deb" "$name.sha256"' EXIT
tar xzf "$name.tar.gz" -C "$dir"
for f in gpuwatch README.md LICENSE gpuwatch.1 gpuwatch.bash gpuwatch.zsh gpuwatch.fish; do
  [ -s "$dir/$name/$f" ] || { echo "release.sh: $name.tar.gz lacks $f" >&2; exit 1; }
done
bin="$dir/$name/gpuwatch"
"$bin" --version
cmp <("$bin" man) "$dir/$name/gpuwatch.1" || { echo "release.sh: the packed man page is not the binary's" >&2; exit 1; }
cmp <("$bin" completions bash) "$dir/$name/gpuwatch.bash" || { echo "release.sh: the packed bash completion is not the binary's" >&2; exit 1; }
"$bin" diagnose --demo=hang --for 40s >/dev/null && rc=0 || rc=$?
[ "$rc" = 1 ] || { echo "release.sh: the packed binary's diagnose --demo=hang exited $rc, not 1" >&2; exit 1; }
[ "$(dpkg-deb -f "$name.deb" Package)" = gpuwatch ] || { echo "release.sh: $name.deb is not gpuwatch's" >&2; exit 1; }
echo "release.sh: the release steps made $name.tar.gz and $name.deb; sums, contents and binary check out"

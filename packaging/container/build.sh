#!/usr/bin/env bash
# Builds latscope's container image from this repository, with no registry:
# FROM scratch, holding the release binary, the shared libraries `ldd` lists
# and their loader, every compatibility name (cyclictest, oslat, ...) as a
# link on PATH, /etc/passwd and /etc/group (root, nobody) and /tmp.
#
#   packaging/container/build.sh                 # podman (else docker): localhost/latscope:VERSION and :latest
#   packaging/container/build.sh --engine docker
#   packaging/container/build.sh --binary PATH --tag localhost/latscope-test:1   # a binary already built
#   packaging/container/build.sh --stage-only DIR   # only assemble the build context in DIR
#
# The names are those the binary writes compatibility man pages for
# (`latscope manpages`), the list packaging/check-deb.sh checks the Debian
# package against, so a new name needs no change here.
# Prints the image's tags and size on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
  echo "usage: build.sh [--engine podman|docker] [--binary PATH] [--tag NAME:TAG] [--stage-only DIR]" >&2
  exit 2
}

engine="" binary="" tag="" stage_only=""
while [ $# -gt 0 ]; do
  case $1 in
    --engine) [ $# -ge 2 ] || usage; engine=$2; shift 2 ;;
    --binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
    --tag) [ $# -ge 2 ] || usage; tag=$2; shift 2 ;;
    --stage-only) [ $# -ge 2 ] || usage; stage_only=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

if [ -z "$stage_only" ]; then
  if [ -z "$engine" ]; then
    if command -v podman >/dev/null 2>&1; then engine=podman
    elif command -v docker >/dev/null 2>&1; then engine=docker
    else echo "build.sh: neither podman nor docker is installed; install one (apt-get install podman runc)" >&2; exit 1
    fi
  fi
  case $engine in
    podman | docker) command -v "$engine" >/dev/null 2>&1 \
      || { echo "build.sh: $engine is not installed" >&2; exit 1; } ;;
    *) echo "build.sh: --engine must be podman or docker, not '$engine'" >&2; exit 2 ;;
  esac
fi

if [ -z "$binary" ]; then
  (cd "$repo" && cargo build --release --locked --bin latscope)
  target_dir=$(cd "$repo" && cargo metadata --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  binary="$target_dir/release/latscope"
fi
[ -x "$binary" ] || { echo "build.sh: $binary is not an executable" >&2; exit 2; }
version=$("$binary" --version) || { echo "build.sh: $binary --version failed" >&2; exit 1; }
version=${version#latscope }

if [ -n "$stage_only" ]; then
  mkdir -p "$stage_only"
  context=$(cd "$stage_only" && pwd)
  [ -z "$(ls -A "$context")" ] || { echo "build.sh: --stage-only $context is not empty" >&2; exit 2; }
else
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
fi
root="$context/rootfs"
mkdir -p "$root/usr/bin" "$root/etc" "$root/tmp" "$root/var/tmp"
chmod 1777 "$root/tmp" "$root/var/tmp"
cp "$here/Containerfile" "$context/Containerfile"

# The binary, stripped when strip is there (a test build's debug
# information is most of its size and serves nothing in the image).
cp "$binary" "$root/usr/bin/latscope"
if command -v strip >/dev/null 2>&1; then strip "$root/usr/bin/latscope"; fi
chmod 755 "$root/usr/bin/latscope"

# The shared libraries and the loader, at the paths the binary asks for
# (the loader's path is written in the binary; the others are found in
# the loader's default directories, which include Debian's multiarch ones).
# (A static binary has none: ldd then fails, and nothing is copied.)
libs=$( (ldd "$binary" 2>/dev/null || true) | awk '/=> \// { print $3 } /^[ \t]*\/[^ ]*ld[^ ]*\.so/ { print $1 }')
for lib in $libs; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
[ -n "$(find "$root" -name 'ld-linux*' -o -name 'ld-musl*' | head -n 1)" ] \
  || echo "build.sh: note: no dynamic loader found by ldd (a static binary?)" >&2

# The compatibility names: one link each, next to latscope on PATH.
pages=$(mktemp -d)
"$binary" manpages --out "$pages" >/dev/null
names=$(cd "$pages/compat/man1" && ls -- *.1 | sed 's/\.1$//')
rm -rf "$pages"
[ -n "$names" ] || { echo "build.sh: latscope wrote no compatibility man page" >&2; exit 1; }
for name in $names; do
  ln -s latscope "$root/usr/bin/$name"
done

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

if [ -n "$stage_only" ]; then
  echo "build.sh: build context in $context (latscope $version, names: $(echo $names))"
  exit 0
fi

tags=("${tag:-localhost/latscope:$version}")
[ -n "$tag" ] || tags+=("localhost/latscope:latest")
tag_args=()
for t in "${tags[@]}"; do tag_args+=(-t "$t"); done
"$engine" build --quiet -f "$context/Containerfile" "${tag_args[@]}" "$context" >/dev/null
size=$("$engine" image inspect --format '{{.Size}}' "${tags[0]}")
echo "build.sh: built ${tags[*]} ($engine): $((size / 1024)) KiB, latscope $version, names: $(echo $names)"

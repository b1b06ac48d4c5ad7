#!/usr/bin/env bash
# What git itself keeps for a pack's history: the floor of `.git / text`.
#
#   bash benches/tools/git_size_floor.sh PACK_DIR
#
# Every commit on PACK_DIR's branch (oldest first) is made again by `git commit` in a new
# repository, from the same files and with the same message, then both repositories are
# packed with `git gc` and `.git` (without git's sample hooks) is set against the text of
# the working tree. Make PACK_DIR with `cargo run --release --example pack_size -- N --keep`.
set -euo pipefail
pack=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git init -q "$work/floor"
git -C "$work/floor" config user.name engram
git -C "$work/floor" config user.email engram@localhost
for c in $(git -C "$pack" rev-list --reverse --first-parent HEAD); do
    find "$work/floor" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
    git -C "$pack" archive "$c" | tar -x -C "$work/floor"
    git -C "$work/floor" add -A
    git -C "$pack" log -1 --format=%B "$c" | git -C "$work/floor" commit -q --allow-empty -F -
done
# Sums of file lengths, as `examples/pack_size` counts them.
bytes() { find "$@" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
size() { bytes "$1/.git" -path "$1/.git/hooks" -prune -o; }
text() { bytes "$1" -path "$1/.git" -prune -o; }
for r in "$pack" "$work/floor"; do git -C "$r" gc -q; done
for r in "$pack" "$work/floor"; do
    name=engram; [ "$r" = "$pack" ] || name=git
    printf '%-6s commits %6s  .git %9s B  logs %8s B  text %8s B  .git/text %s\n' "$name" \
        "$(git -C "$r" rev-list --count HEAD)" "$(size "$r")" "$(bytes "$r/.git/logs")" \
        "$(text "$r")" "$(echo "scale=2; $(size "$r") / $(text "$r")" | bc)"
done

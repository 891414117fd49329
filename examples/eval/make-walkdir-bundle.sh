#!/bin/sh
# Makes walkdir.bundle: six real commits of BurntSushi/walkdir
# (https://github.com/BurntSushi/walkdir, MIT/Unlicense), replayed with only
# README.md, src/lib.rs and src/tests/recursive.rs kept, with their original
# authors, dates and messages. Usage: make-walkdir-bundle.sh MIRROR OUTPUT
# (MIRROR: a clone of walkdir, such as the `fetch` tool's bare mirror).
#
#   1 011973f tests: restructure them            (the root: README.md, src/lib.rs)
#   2 4235b63 tests: rewrite them                (tests only: adds src/tests/recursive.rs)
#   3 e09ce1c internals: re-arrange implementation
#   4 7e0754a bug: fix use of skip_current_dir   (a fix: src/lib.rs and a regression test)
#   5 30e91a7 bug: fastidiously increment oldest_opened (a fix: src/lib.rs)
#   6 8e757b1 readme: document MSRV policy       (docs only)
set -eu
mirror=$1
output=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git init --quiet --initial-branch=master "$work/repo"
parent=
for commit in 011973f 4235b63 e09ce1c 7e0754a 30e91a7 8e757b1; do
    export GIT_INDEX_FILE="$work/index"
    rm -f "$GIT_INDEX_FILE"
    for path in README.md src/lib.rs src/tests/recursive.rs; do
        if entry=$(git -C "$mirror" ls-tree "$commit" -- "$path") && [ -n "$entry" ]; then
            blob=$(echo "$entry" | awk '{print $3}')
            git -C "$mirror" cat-file blob "$blob" > "$work/blob"
            new=$(git -C "$work/repo" hash-object -w "$work/blob")
            git -C "$work/repo" update-index --add --cacheinfo "100644,$new,$path"
        fi
    done
    tree=$(git -C "$work/repo" write-tree)
    unset GIT_INDEX_FILE
    export GIT_AUTHOR_NAME="$(git -C "$mirror" log -1 --format=%an "$commit")"
    export GIT_AUTHOR_EMAIL="$(git -C "$mirror" log -1 --format=%ae "$commit")"
    export GIT_AUTHOR_DATE="$(git -C "$mirror" log -1 --format=%aI "$commit")"
    export GIT_COMMITTER_NAME="$(git -C "$mirror" log -1 --format=%cn "$commit")"
    export GIT_COMMITTER_EMAIL="$(git -C "$mirror" log -1 --format=%ce "$commit")"
    export GIT_COMMITTER_DATE="$(git -C "$mirror" log -1 --format=%cI "$commit")"
    git -C "$mirror" log -1 --format=%B "$commit" > "$work/message"
    printf '\n(walkdir %s, replayed with three paths)\n' "$(git -C "$mirror" rev-parse "$commit")" >> "$work/message"
    if [ -n "$parent" ]; then
        parent=$(git -C "$work/repo" commit-tree "$tree" -p "$parent" -F "$work/message")
    else
        parent=$(git -C "$work/repo" commit-tree "$tree" -F "$work/message")
    fi
done
git -C "$work/repo" update-ref refs/heads/master "$parent"
# A pull request that brings the skip_current_dir bug back: commit 4's tree
# with src/lib.rs as it was before the fix, on top of commit 4.
fix=$(git -C "$work/repo" rev-parse master~2)
export GIT_INDEX_FILE="$work/index"
git -C "$work/repo" read-tree "$fix"
git -C "$work/repo" update-index --cacheinfo "100644,$(git -C "$work/repo" rev-parse "$fix~1:src/lib.rs"),src/lib.rs"
tree=$(git -C "$work/repo" write-tree)
unset GIT_INDEX_FILE
export GIT_AUTHOR_NAME=example GIT_AUTHOR_EMAIL=example@example.com GIT_COMMITTER_NAME=example GIT_COMMITTER_EMAIL=example@example.com
export GIT_AUTHOR_DATE=2019-07-21T12:00:00Z GIT_COMMITTER_DATE=2019-07-21T12:00:00Z
bug=$(git -C "$work/repo" commit-tree "$tree" -p "$fix" -m "Simplify skip_current_dir")
git -C "$work/repo" update-ref refs/heads/simplify-skip "$bug"
git -C "$work/repo" tag fixed "$fix"
git -C "$work/repo" bundle create "$output" master simplify-skip fixed
git -C "$work/repo" log --format='%h %s' master simplify-skip
git -C "$work/repo" diff -U0 fixed simplify-skip

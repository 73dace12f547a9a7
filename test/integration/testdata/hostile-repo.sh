#!/bin/sh
# hostile-repo.sh REPO MARKS [lazy] builds, in the empty directory REPO, a git repository whose
# configuration names a program for every way git starts one on its own during a read-only
# command. Each program, if it runs, creates a file in MARKS named for it:
#
#   fsmonitor   core.fsmonitor
#   clean       the clean command of the filter driver .gitattributes gives *.txt
#   smudge      its smudge command
#   process     a process filter driver (*.bin), configured through includeIf
#   textconv    the textconv command of the diff driver .gitattributes gives *.txt
#   command     that diff driver's external command
#   external    diff.external (for other.md, which has no diff driver), configured through include.path
#   hook        every hook, in .git/hooks and under core.hooksPath
#   transport   with "lazy": a fetch of a partial clone's missing blob (lazy.txt's, in HEAD)
#               through an ext:: remote
#   pager       core.pager and pager.*
#   submodule   the clean command of a filter driver the submodule sub configures for itself
#
# Afterwards tracked.txt and other.md are modified and new.txt is untracked. A test drives tandem
# against REPO and expects MARKS to stay empty. (The pager never runs without a terminal; it is
# there so that a change that gives git one shows.)
set -eu
repo=$1
marks=$2
cd "$repo"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com

git init -q -b main
printf '*.txt filter=evil diff=evil\n*.bin filter=inc\n' >.gitattributes
printf 'hello\n' >tracked.txt
printf 'bin\n' >data.bin
printf 'other\n' >other.md
# sub is a repository of its own, committed as a submodule (a gitlink).
git init -q sub
(cd sub && printf 'sub\n' >s.txt && printf '*.txt filter=sub\n' >.gitattributes && git add . && git commit -qm sub)
git -c advice.addEmbeddedRepo=false add .
git commit -qm start

if [ "${3:-}" = lazy ]; then
	# lazy.txt's blob is named in HEAD but not stored: reading it makes git fetch it from the
	# promisor remote, whose ext:: transport runs a command.
	missing=$(printf 'lazy\n' | git hash-object --stdin)
	tree=$( (git ls-tree HEAD; printf '100644 blob %s\tlazy.txt\n' "$missing") | git mktree --missing)
	git update-ref HEAD "$(git commit-tree -p HEAD -m lazy "$tree")"
	git config core.repositoryformatversion 1
	git config extensions.partialClone origin
	git config remote.origin.url "ext::sh -c touch% $marks/transport"
	git config remote.origin.promisor true
	git config protocol.ext.allow always
fi

mark() { printf 'touch %s/%s; ' "$marks" "$1"; }
git config core.fsmonitor "$(mark fsmonitor)false"
git -C sub config filter.sub.clean "$(mark submodule)cat"
git config filter.evil.clean "$(mark clean)cat"
git config filter.evil.smudge "$(mark smudge)cat"
git config filter.evil.required true
git config diff.evil.textconv "$(mark textconv)cat"
git config diff.evil.command "$(mark command)true"
git config core.pager "$(mark pager)cat"
git config pager.diff "$(mark pager)cat"
git config pager.status "$(mark pager)cat"

printf '[diff]\n\texternal = %s\n' "$(mark external)true" >.git/more.config
git config include.path more.config
printf '[filter "inc"]\n\tprocess = %s\n' "$(mark process)cat" >.git/branch.config
git config includeIf.onbranch:main.path branch.config

mkdir -p .git/hooks .githooks
for hook in post-index-change post-checkout reference-transaction pre-auto-gc post-commit pre-commit; do
	printf '#!/bin/sh\n%s\n' "$(mark hook)" >.git/hooks/$hook
	cp .git/hooks/$hook .githooks/$hook
	chmod +x .git/hooks/$hook .githooks/$hook
done
git config core.hooksPath .githooks

printf 'hello\nchanged\n' >tracked.txt
printf 'other\nchanged\n' >other.md
printf 'new\n' >new.txt
printf 'SUB\n' >sub/s.txt # the same size: git reads it through the filter to tell

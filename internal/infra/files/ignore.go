package files

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Rules is an ordered list of gitignore rules (gitignore(5)), each anchored to the directory of the
// file it was read from. The last rule that matches a path decides; a path under an ignored
// directory is ignored whatever later rules say, as git has it.
type Rules struct {
	list []rule
}

type rule struct {
	base    string // the ignore file's directory, slash-separated and relative to the walk root ("" for the root)
	above   string // for an ignore file above the walk root: the root's path relative to that file's directory
	negate  bool   // "!pattern": re-include
	dirOnly bool   // "pattern/": directories only
	re      *regexp.Regexp
}

// ignoreFiles are read in every directory a walk enters: git's own, and the .ignore file ripgrep and
// other tools honour.
var ignoreFiles = []string{".gitignore", ".ignore"}

// vcsDirs are never listed: version-control internals.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true}

// With returns the rules followed by those parsed from content, an ignore file in directory base
// (slash-separated, relative to the walk root). The receiver is not modified.
func (r *Rules) With(base string, content []byte) *Rules {
	return r.with(parseIgnore(base, content))
}

func (r *Rules) with(added []rule) *Rules {
	if len(added) == 0 {
		return r
	}
	out := &Rules{list: make([]rule, 0, len(r.list)+len(added))}
	out.list = append(append(out.list, r.list...), added...)
	return out
}

// Len is the number of rules.
func (r *Rules) Len() int { return len(r.list) }

// Match reports whether rel (slash-separated, relative to the walk root) is ignored by the rules on
// its own, without looking at its parent directories.
func (r *Rules) Match(rel string, dir bool) bool {
	for i := len(r.list) - 1; i >= 0; i-- {
		ru := &r.list[i]
		if ru.dirOnly && !dir {
			continue
		}
		sub := rel
		if ru.base != "" {
			var ok bool
			if sub, ok = strings.CutPrefix(rel, ru.base+"/"); !ok {
				continue
			}
		}
		if ru.above != "" {
			sub = ru.above + "/" + sub
		}
		if ru.re.MatchString(sub) {
			return !ru.negate
		}
	}
	return false
}

// Ignored reports whether rel or any directory above it is ignored.
func (r *Rules) Ignored(rel string, dir bool) bool {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && r.Match(rel[:i], true) {
			return true
		}
	}
	return r.Match(rel, dir)
}

// parseIgnore reads the patterns of one ignore file. Lines that are not valid patterns are skipped,
// as git skips them.
func parseIgnore(base string, content []byte) []rule {
	var out []rule
	for _, line := range bytes.Split(content, []byte("\n")) {
		if ru, ok := compileIgnore(base, string(bytes.TrimSuffix(line, []byte("\r")))); ok {
			out = append(out, ru)
		}
	}
	return out
}

func compileIgnore(base, line string) (rule, bool) {
	if line == "" || line[0] == '#' {
		return rule{}, false
	}
	// Trailing spaces are dropped unless the last one is escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	ru := rule{base: base}
	if line[0] == '!' {
		ru.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		ru.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule{}, false
	}
	// A slash anywhere but at the end anchors the pattern to the ignore file's directory; otherwise
	// it matches a name at any depth below it.
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	body, ok := ignoreRegexp(line)
	if !ok {
		return rule{}, false
	}
	prefix := "^"
	if !anchored {
		prefix = "^(?:.*/)?"
	}
	re, err := regexp.Compile(prefix + body + "$")
	if err != nil {
		return rule{}, false
	}
	ru.re = re
	return ru, true
}

// ignoreRegexp translates a gitignore glob (without its "!", leading or trailing slash) into a
// regular expression over slash-separated paths: * and ? never cross a slash, "**" as a whole path
// segment crosses any number of them, [...] is a class, and a backslash quotes the next character.
func ignoreRegexp(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			segStart := i == 0 || p[i-1] == '/'
			segEnd := j == len(p) || p[j] == '/'
			switch {
			case j-i == 2 && segStart && j == len(p):
				b.WriteString(".*") // "**" or "dir/**": everything (inside)
			case j-i == 2 && segStart && segEnd:
				b.WriteString("(?:.*/)?") // "**/": zero or more directories
				j++                       // the slash is part of it
			default:
				b.WriteString("[^/]*")
			}
			i = j - 1
		case '?':
			b.WriteString("[^/]")
		case '[':
			class, n, ok := ignoreClass(p[i:])
			if !ok {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i += n - 1
		case '\\':
			if i+1 == len(p) {
				return "", false // a trailing backslash is an invalid pattern
			}
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	return b.String(), true
}

// ignoreClass translates the bracket expression at the start of p and says how many bytes it took.
// A class never matches a slash.
func ignoreClass(p string) (string, int, bool) {
	i := 1
	var b strings.Builder
	b.WriteByte('[')
	negated := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negated {
		b.WriteString("^/")
		i++
	}
	first, members := true, 0
	for i < len(p) {
		c := p[i]
		switch {
		case c == ']' && !first:
			if members == 0 && !negated {
				return `[^\x00-\x{10FFFF}]`, i + 1, true // only slashes: matches nothing
			}
			b.WriteByte(']')
			return b.String(), i + 1, true
		case c == '/':
			// never a member
		case c == '[' && strings.HasPrefix(p[i:], "[:"):
			end := strings.Index(p[i+2:], ":]")
			if end < 0 {
				return "", 0, false
			}
			b.WriteString(p[i : i+2+end+2])
			i += 2 + end + 2
			first = false
			members++
			continue
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(`\` + p[i:i+1])
		case c == '\\' || c == ']' || c == '[' || c == '^':
			b.WriteString(`\` + string(c))
		default:
			b.WriteByte(c)
		}
		if c != '/' {
			members++
		}
		first = false
		i++
	}
	return "", 0, false
}

// RootRules are the rules that apply at root before any file inside it is read: when root lies
// inside a git work tree, the repository's info/exclude and the ignore files of every directory from
// the work tree's top down to root's parent.
func RootRules(root string) *Rules {
	r := &Rules{}
	top := worktreeTop(root)
	if top == "" {
		return r
	}
	above := func(d string, content []byte) {
		added := parseIgnore("", content)
		if d != root {
			for i := range added {
				added[i].above = RelSlash(d, root)
			}
		}
		r = r.with(added)
	}
	if b, err := os.ReadFile(filepath.Join(gitDir(top), "info", "exclude")); err == nil {
		above(top, b)
	}
	for d := top; d != root; {
		for _, name := range ignoreFiles {
			if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
				above(d, b)
			}
		}
		next, _, _ := strings.Cut(RelSlash(d, root), "/")
		d = filepath.Join(d, next)
	}
	return r
}

// worktreeTop is the nearest directory at or above dir holding a .git entry, or "".
func worktreeTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// gitDir is a work tree's git directory, following a linked worktree's or submodule's ".git" file.
func gitDir(top string) string {
	dot := filepath.Join(top, ".git")
	b, err := os.ReadFile(dot)
	if err != nil {
		return dot
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return dot
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(top, target)
	}
	return target
}

// Walk visits every file and directory under root that the ignore rules leave in, in lexical order,
// with its path relative to root (slash-separated). Ignore files are read in each directory as the
// walk enters it; version-control directories are never entered. Returning fs.SkipDir from visit on
// a directory skips it; fs.SkipAll ends the walk without an error. Unreadable directories are
// skipped; a cancelled context stops the walk.
func Walk(ctx context.Context, root string, visit func(rel string, d fs.DirEntry) error) error {
	err := walkDir(ctx, root, "", RootRules(root), visit)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func walkDir(ctx context.Context, abs, rel string, rules *Rules, visit func(string, fs.DirEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		if rel == "" {
			return err
		}
		return nil
	}
	for _, e := range entries {
		for _, name := range ignoreFiles {
			if e.Name() == name && !e.IsDir() {
				if b, err := os.ReadFile(filepath.Join(abs, name)); err == nil {
					rules = rules.With(rel, b)
				}
			}
		}
	}
	for _, e := range entries {
		name := e.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		dir := e.IsDir()
		if dir && vcsDirs[name] {
			continue
		}
		if rules.Match(childRel, dir) {
			continue
		}
		err := visit(childRel, e)
		if dir {
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			if err != nil {
				return err
			}
			if err := walkDir(ctx, filepath.Join(abs, name), childRel, rules, visit); err != nil {
				return err
			}
			continue
		}
		if err != nil && !errors.Is(err, fs.SkipDir) {
			return err
		}
	}
	return nil
}

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Refused names the paths a command's output says it was denied and that lie outside what p let
// it write (writable as given to Command) but that tandem's own, unconfined process could write:
// the sandbox's refusals, for the note that tells the model how to get the directory approved. It reads error messages (cp, tee, touch, python, the
// shells' redirections), so it only ever shapes that note; it decides nothing.
func (p Policy) Refused(output string, writable []string) []string {
	if !p.Confines() {
		return nil
	}
	var roots []string
	for _, w := range p.WritableDirs(writable) {
		roots = append(roots, evalExisting(w))
	}
	var protected []string
	for _, pr := range p.Protected {
		protected = append(protected, evalExisting(pr))
	}
	var out []string
	for line := range strings.Lines(output) {
		if !strings.Contains(line, "Permission denied") && !strings.Contains(line, "Operation not permitted") {
			continue
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == '\'' || r == '"' || r == '`' || r == ' ' || r == '\t' })
		for i, field := range fields {
			if i == 0 && strings.HasSuffix(field, ":") && slices.ContainsFunc(fields[1:], func(f string) bool { return filepath.IsAbs(f) }) {
				continue // the program that reports ("/usr/bin/bash: line 1: /x: …"), not what it was refused
			}
			field = strings.TrimRight(field, ":,)\n")
			if !filepath.IsAbs(field) {
				continue
			}
			real := evalExisting(field)
			allowed := false
			for _, r := range roots {
				allowed = allowed || within(r, real)
			}
			for _, pr := range protected {
				allowed = allowed && !within(pr, real)
			}
			if !allowed && writableUnconfined(real) && !slices.Contains(out, real) {
				out = append(out, real)
			}
		}
	}
	return out
}

// evalExisting evaluates the symlinks of the longest existing prefix of p, as the kernel would
// walk it ("/dev/fd/../.." climbs from where /dev/fd leads), and appends the rest.
func evalExisting(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	parent, base := filepath.Split(strings.TrimRight(p, "/"))
	if parent == "" || parent == p || base == "" {
		return filepath.Clean(p)
	}
	if base == ".." {
		return filepath.Dir(evalExisting(parent))
	}
	return filepath.Join(evalExisting(parent), base)
}

// within reports whether p is dir or inside it (both cleaned and absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// writableUnconfined reports whether tandem's user may write p (or create it in its directory)
// without the sandbox: a denial of such a path was the sandbox's, not the file's permissions.
func writableUnconfined(p string) bool {
	if canWrite(p) {
		return true
	}
	_, err := os.Lstat(p)
	return os.IsNotExist(err) && canWrite(filepath.Dir(p))
}

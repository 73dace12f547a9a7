// Package shelljudge judges a shell command before it runs. It parses the command with a real shell
// parser (mvdan.cc/sh) and reports, from the syntax tree, every simple command that will run
// wherever it sits (lists, pipelines, subshells, substitutions, expansions, here-documents, function
// bodies, control flow), every redirection that writes a file, and everything whose effect cannot be
// known before it runs. Permission decisions are made from this report, never from the raw string.
package shelljudge

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command that will run.
type Command struct {
	// Source is the command as written, for people to read.
	Source string `json:"source"`
	// Pattern is what permission rules and grants are matched against: the words of the command that
	// actually runs (wrappers such as timeout and harmless variable prefixes removed), static words by
	// their value, dynamic ones as written.
	Pattern string `json:"pattern"`
	// Always is the pattern an "always" answer may remember, e.g. "git status *"; empty when no
	// lasting grant may be offered for this command.
	Always string `json:"always,omitempty"`
	// Named is, for a command named by a path (/usr/bin/git push), the pattern by its base name
	// (git push): deny and ask rules about the program apply to it too.
	Named string `json:"named,omitempty"`
}

// Write is a redirection that writes a file.
type Write struct {
	Path   string `json:"path"` // as written, with a leading ~ expanded; relative to the command's directory
	Append bool   `json:"append,omitempty"`
}

// Analysis is what a command line will do, as far as it can be known before it runs.
type Analysis struct {
	Commands []Command `json:"commands"`
	Writes   []Write   `json:"writes,omitempty"`
	// Unjudged says, for each part whose effect cannot be known statically, why. A command with any
	// unjudged part must be asked about every time: no lasting grant can cover it.
	Unjudged []string `json:"unjudged,omitempty"`
}

// Analyze parses script in dialect d and reports what it will do. home expands a leading ~ in
// redirection targets. A script that does not parse is reported as unjudged with the parser's message.
func Analyze(script string, d Dialect, home string) Analysis {
	a := &analyzer{home: home, seen: map[string]bool{}}
	a.script(script, d, 0)
	if a.changesDir {
		for _, w := range a.out.Writes {
			if !filepath.IsAbs(w.Path) {
				a.unjudged(fmt.Sprintf("the directory %q is written in depends on an earlier cd", w.Path))
			}
		}
	}
	return a.out
}

// maxDepth bounds how deep sh -c '...' scripts are parsed inside each other.
const maxDepth = 4

type analyzer struct {
	home       string
	out        Analysis
	seen       map[string]bool
	changesDir bool
}

func (a *analyzer) unjudged(reason string) {
	if !slices.Contains(a.out.Unjudged, reason) {
		a.out.Unjudged = append(a.out.Unjudged, reason)
	}
}

func (a *analyzer) script(src string, d Dialect, depth int) {
	if depth > maxDepth {
		a.unjudged("shell scripts nested too deeply to follow")
		return
	}
	if strings.ContainsRune(src, '\r') {
		// The parser reads a carriage return as a line's end (CRLF scripts); the shells read it as
		// part of a word, so ">&\r0" is a write to a file named "\r0" that the parser sees as ">&0".
		a.unjudged("it contains a carriage return, which the shell reads as part of a word")
	}
	f, err := syntax.NewParser(syntax.Variant(d.lang())).Parse(strings.NewReader(src), "")
	if err != nil {
		a.unjudged("the command could not be parsed: " + err.Error())
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if d == POSIX {
			a.posixAmbiguity(n)
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			a.call(n, d, depth)
		case *syntax.DeclClause:
			a.declare(n)
		case *syntax.Redirect:
			a.redirect(n)
		case *syntax.Assign:
			a.assign(n)
		case *syntax.ArithmExp:
			a.arithmetic(n.X)
		case *syntax.ArithmCmd:
			a.arithmetic(n.X)
		case *syntax.LetClause:
			for _, x := range n.Exprs {
				a.arithmetic(x)
			}
		case *syntax.CStyleLoop:
			a.arithmetic(n.Init)
			a.arithmetic(n.Cond)
			a.arithmetic(n.Post)
		case *syntax.ArrayElem:
			a.arithmetic(n.Index)
		case *syntax.ParamExp:
			if w, ok := n.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*") {
				a.arithmetic(n.Index) // ${a[@]} and ${a[*]} name every element; anything else is evaluated
			}
			if n.Slice != nil {
				a.arithmetic(n.Slice.Offset)
				a.arithmetic(n.Slice.Length)
			}
			if n.Excl {
				a.unjudged("an indirect expansion (${!name}) reads a variable chosen at run time")
			}
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.Contains(n.Exp.Word.Lit(), "P") {
				a.unjudged("a prompt expansion (${name@P}) runs the command substitutions in a variable's value")
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
				if w, ok := n.X.(*syntax.Word); ok {
					a.variableName(w)
				} else {
					a.unjudged("a variable test on something other than a name")
				}
			}
		case *syntax.BinaryTest:
			if isArithmeticTest(n.Op) && (!static(n.X) || !static(n.Y)) {
				a.unjudged("an arithmetic comparison on a variable can run commands hidden in its value")
			}
		case *syntax.CoprocClause:
			// Its body is walked like any other statement.
		}
		return true
	})
}

// dangerousVariables change which program runs or what a shell executes when set.
var dangerousVariables = []string{"PATH", "IFS", "ENV", "BASH_ENV", "PS4", "SHELLOPTS", "BASHOPTS",
	"PROMPT_COMMAND", "CDPATH", "HOME", "PAGER", "GIT_PAGER", "EDITOR", "VISUAL", "NODE_OPTIONS",
	"PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB"}

func dangerousVariable(name string) bool {
	return slices.Contains(dangerousVariables, name) || strings.HasPrefix(name, "LD_") ||
		strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "DYLD_")
}

func (a *analyzer) assign(as *syntax.Assign) {
	if as.Name != nil && dangerousVariable(as.Name.Value) {
		a.unjudged(fmt.Sprintf("it sets %s, which changes what programs run or how", as.Name.Value))
	}
	if as.Index != nil {
		a.arithmetic(as.Index)
	}
}

// arithmetic flags arithmetic on anything but numbers: bash evaluates a variable's value (or a
// substitution's output) as an expression there, and an expression such as a[$(cmd)] runs cmd.
func (a *analyzer) arithmetic(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	// Only numbers are safe: a name, an expansion or a substitution gives text that bash evaluates
	// again as an expression, and a[$(cmd)] in that text runs cmd.
	reads := false
	syntax.Walk(x, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			if !isNumber(w.Lit()) {
				reads = true
			}
			return false // a substitution's commands are judged where the walk of the script meets them
		}
		return true
	})
	if reads {
		a.unjudged("arithmetic on a name or an expansion can run commands hidden in its value")
	}
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789xXabcdefABCDEF#", r) {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// isDecimal reports whether s is a non-empty run of the digits 0-9.
// isDescriptor reports whether s names a file descriptor: decimal digits whose value fits in an int.
func isDescriptor(s string) bool {
	_, err := strconv.ParseInt(s, 10, 32)
	return isDecimal(s) && err == nil
}

func isDecimal(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func isArithmeticTest(op syntax.BinTestOperator) bool {
	switch op {
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		return true
	}
	return false
}

func static(x syntax.TestExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	v, ok := wordValue(w)
	return ok && isNumber(v)
}

// harmlessTargets are files a redirection may write without touching anything.
var harmlessTargets = []string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}

func (a *analyzer) redirect(r *syntax.Redirect) {
	appendMode := false
	switch r.Op {
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob, syntax.RdrInOut:
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob:
		appendMode = true
	case syntax.DplOut:
		// >&2 and >&- duplicate or close descriptors; >&file writes a file.
		// Only decimal digits name a descriptor (bash reads >&0A as a file named 0A), and only a
		// number a descriptor can be: busybox sh writes >&2200000000 to a file of that name. A quoted
		// or escaped number busybox sh reads sometimes as a descriptor (>&\2, >&'2') and sometimes
		// as a file (>&00\0\0\0\0\0\0\0\0\0\000 writes a file named with 14 zeros, where
		// the same zeros unquoted duplicate descriptor 0): tandem cannot tell, so it asks about the file.
		// >&3- (bash moves descriptor 3) is a file named 3- to busybox sh: tandem asks about the file.
		if v := r.Word.Lit(); !strings.ContainsRune(v, '\\') && (v == "-" || isDescriptor(v)) {
			return
		}
	default:
		return
	}
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		a.unjudged("a redirection to a descriptor named at run time")
	}
	a.writeTo(wordOf(r.Word), appendMode)
}

// writeTo records a write to the file a word names (a redirection's, time -o's).
func (a *analyzer) writeTo(w word, appendMode bool) {
	path, ok := w.value, w.static
	if !ok {
		a.unjudged(fmt.Sprintf("it writes to a file named at run time (%s)", w.source))
		return
	}
	if path == "~" || strings.HasPrefix(path, "~/") {
		if a.home == "" {
			a.unjudged("it writes under ~, and the home directory is unknown")
			return
		}
		path = filepath.Join(a.home, strings.TrimPrefix(path, "~"))
	} else if strings.HasPrefix(path, "~") {
		a.unjudged(fmt.Sprintf("it writes under another user's home (%s)", path))
		return
	}
	a.write(path, appendMode)
}

// write records a file the command writes. Only the exact names of harmlessTargets write nothing;
// any other path is a file, resolved (symlinks and all) by whoever asks for it.
func (a *analyzer) write(path string, appendMode bool) {
	if slices.Contains(harmlessTargets, path) {
		return
	}
	clean := filepath.ToSlash(filepath.Clean(path))
	for _, through := range []string{"/dev/fd", "/proc", "/dev/stdin", "/dev/stdout", "/dev/stderr"} {
		if clean == through || strings.HasPrefix(clean, through+"/") || strings.HasPrefix(path, through+"/") {
			// /dev/fd/N and /proc/self lead where the command's own descriptors and process do,
			// which tandem cannot see from outside: /dev/fd/../../..$HOME/.bashrc is any file.
			a.unjudged(fmt.Sprintf("it writes through %s, which leads wherever the running command's descriptors do (%s)", through, path))
			return
		}
	}
	for _, w := range a.out.Writes {
		if w.Path == path {
			return
		}
	}
	a.out.Writes = append(a.out.Writes, Write{Path: path, Append: appendMode})
}

// printed is the source text of a node.
func printed(n syntax.Node) string {
	var b bytes.Buffer
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, n); err != nil {
		return "?"
	}
	return strings.TrimSpace(b.String())
}

// wordValue is the value of a word that expands to exactly one fixed string: literals, quotes and
// escapes, but no expansion, substitution, glob or brace expansion.
func wordValue(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	if len(w.Parts) == 1 && w.Lit() == "[" {
		return "[", true // a lone [ is the test command, not a bracket expression
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, ok := unquotedLit(p.Value)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false // $'...' decodes escapes; judged as dynamic
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unquotedLit removes backslash escapes from an unquoted literal and refuses globs, brace expansion
// and tilde forms whose value the shell decides.
func unquotedLit(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?', '[', '{', '}':
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

func unescapeDouble(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

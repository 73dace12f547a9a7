package shelljudge

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// posixAmbiguity flags what POSIX shells read differently from each other. sh may be dash, busybox
// ash (which knows $'…' and [[) or bash in POSIX mode (which knows all of them), so a judgement in
// one grammar would not hold for the others.
func (a *analyzer) posixAmbiguity(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.SglQuoted:
		if n.Dollar {
			a.unjudged("$'…' is read differently by different sh shells")
		}
	case *syntax.DblQuoted:
		if n.Dollar {
			a.unjudged(`$"…" is read differently by different sh shells`)
		}
	case *syntax.Word:
		for i, part := range n.Parts[:max(len(n.Parts)-1, 0)] {
			lit, ok := part.(*syntax.Lit)
			if !ok || !strings.HasSuffix(lit.Value, "$") || strings.HasSuffix(lit.Value, `\$`) {
				continue
			}
			switch n.Parts[i+1].(type) {
			case *syntax.SglQuoted, *syntax.DblQuoted:
				a.unjudged("$'…' and $\"…\" are read differently by different sh shells")
			}
		}
	case *syntax.CallExpr:
		if len(n.Args) > 0 {
			switch n.Args[0].Lit() {
			case "[[", "function", "select", "coproc", "let", "declare", "typeset":
				a.unjudged(fmt.Sprintf("%s is read differently by different sh shells", n.Args[0].Lit()))
			}
		}
	case *syntax.Subshell:
		if len(n.Stmts) > 0 {
			if inner, ok := n.Stmts[0].Cmd.(*syntax.Subshell); ok && inner.Lparen.Offset() == n.Lparen.Offset()+1 {
				a.unjudged("(( is arithmetic to some sh shells and two subshells to others")
			}
		}
	}
}

// declare judges declare, typeset, local, export, readonly and nameref. Their arguments are
// assignments that bash parses again at run time: a quoted 'a[$(cmd)]=1' runs cmd, -i makes later
// assignments arithmetic, -n makes a name lead to another.
func (a *analyzer) declare(d *syntax.DeclClause) {
	if d.Variant.Value == "nameref" {
		a.unjudged("a nameref makes a variable name lead to another chosen at run time")
	}
	for _, as := range d.Args {
		if !as.Naked || as.Value == nil {
			continue // name=value: the walk judges its name and its value
		}
		v, ok := wordValue(as.Value)
		switch {
		case !ok:
			a.unjudged(fmt.Sprintf("%s is given an argument decided at run time (%s)", d.Variant.Value, printed(as.Value)))
		case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
			if strings.Trim(v[1:], "fFgprtxlu") != "" {
				a.unjudged(fmt.Sprintf("%s %s gives variables a meaning (arithmetic, arrays, references) that can run commands later", d.Variant.Value, v))
			}
		default:
			name, _, _ := strings.Cut(v, "=")
			a.name(d.Variant.Value, name)
		}
	}
}

// name judges a word that a builtin takes as a variable name: a subscript (a[$(cmd)]) is
// evaluated as arithmetic, which runs the substitutions in it.
func (a *analyzer) name(builtin, v string) {
	if strings.ContainsAny(v, "[]") {
		a.unjudged(fmt.Sprintf("%s evaluates the subscript of %s, which can run commands", builtin, v))
	} else if dangerousVariable(v) {
		a.unjudged(fmt.Sprintf("it sets %s, which changes what programs run or how", v))
	}
}

func (a *analyzer) variableName(w *syntax.Word) {
	v, ok := wordValue(w)
	if !ok {
		a.unjudged(fmt.Sprintf("a variable name decided at run time (%s)", printed(w)))
		return
	}
	a.name("a variable test", v)
}

// nameArgs judges the builtins that take variable names as arguments (printf -v, read, test -v,
// unset, getopts, wait -p, and declare's family where the parser sees it as a plain command).
func (a *analyzer) nameArgs(base string, args []word) {
	names := func(ws []word) {
		for _, w := range ws {
			if !w.static {
				a.unjudged(fmt.Sprintf("%s is given a variable name decided at run time (%s)", base, w.source))
				continue
			}
			name, _, _ := strings.Cut(w.value, "=")
			a.name(base, name)
		}
	}
	// optionValues reads the leading options, where the letters of opts take a value ("-v name" or
	// "-vname"); it returns the values of the letters in nameLetters, and the words after the options.
	optionValues := func(opts string, nameLetters string) (taken []word, rest []word) {
		i := 0
		for ; i < len(args); i++ {
			w := args[i]
			if !w.static {
				a.unjudged(fmt.Sprintf("%s is given an option decided at run time (%s)", base, w.source))
				return taken, nil
			}
			if w.value == "--" {
				i++
				break
			}
			if !strings.HasPrefix(w.value, "-") || w.value == "-" {
				break
			}
			for j := 1; j < len(w.value); j++ {
				c := w.value[j]
				if !strings.ContainsRune(opts, rune(c)) {
					continue
				}
				value := word{value: w.value[j+1:], static: true, source: w.value[j+1:]}
				if j+1 == len(w.value) {
					if i+1 >= len(args) {
						return taken, nil
					}
					i++
					value = args[i]
				}
				if strings.ContainsRune(nameLetters, rune(c)) {
					taken = append(taken, value)
				}
				break
			}
		}
		return taken, args[min(i, len(args)):]
	}
	switch base {
	case "printf":
		taken, _ := optionValues("v", "v")
		names(taken)
	case "read":
		taken, rest := optionValues("adinNptu", "a")
		names(taken)
		names(rest)
	case "unset", "export", "readonly", "local", "declare", "typeset":
		_, rest := optionValues("", "")
		names(rest)
	case "getopts":
		if len(args) >= 2 {
			names(args[1:2])
		}
	case "wait":
		taken, _ := optionValues("p", "p")
		names(taken)
	case "test", "[":
		for i, w := range args {
			if w.static && (w.value == "-v" || w.value == "-R") && i+1 < len(args) {
				names(args[i+1 : i+2])
			}
		}
	}
}

// Package manpage renders man pages (roff) from a cobra command tree, so that the pages a user reads
// with man(1) say exactly what --help says and cannot drift from it.
package manpage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Write writes a page for root and each of its visible commands into dir, and removes
// pages of commands that no longer exist, so the directory always matches the commands.
func Write(root *cobra.Command, dir string) error {
	pages := Pages(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		return err
	}
	for _, path := range old {
		if _, ok := pages[filepath.Base(path)]; !ok {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	for name, page := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), page, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Pages renders every page, keyed by file name. Cobra's own help flag, version flag and
// completion command are added first (Execute adds them too), so a page reads the same whether
// it is written by the running binary or by a test.
func Pages(root *cobra.Command) map[string][]byte {
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	pages := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		pages[manName(c)+".1"] = manPage(c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	return pages
}

// manName is the page's name: the command path joined with hyphens (tandem-serve).
func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// manPage renders one command as a roff man(7) page.
func manPage(c *cobra.Command) []byte {
	var b bytes.Buffer
	name := manName(c)
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"tandem\" \"User Commands\"\n", strings.ToUpper(name))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, roffText(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roffText(c.UseLine()))
	description := c.Long
	if description == "" {
		description = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffParagraphs(description))
	writeFlags(&b, "OPTIONS", c.NonInheritedFlags())
	writeFlags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.EX\n%s\n.EE\n", roffText(strings.TrimRight(c.Example, "\n")))
	}
	var see []string
	if c.HasParent() {
		see = append(see, fmt.Sprintf("\\fB%s\\fP(1)", manName(c.Parent())))
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, fmt.Sprintf("\\fB%s\\fP(1)", manName(sub)))
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
	}
	return b.Bytes()
}

// writeFlags lists the visible flags of a set as tagged paragraphs, in the order --help shows them.
func writeFlags(b *bytes.Buffer, title string, flags *pflag.FlagSet) {
	if !flags.HasAvailableFlags() {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", title)
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		// \- is a minus sign, which copies as the ASCII hyphen a shell needs; - is a typographic hyphen.
		tag := "\\fB\\-\\-" + strings.ReplaceAll(roffText(f.Name), "-", "\\-") + "\\fR"
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			tag = "\\fB\\-" + roffText(f.Shorthand) + "\\fR, " + tag
		}
		if varname != "" {
			tag += " \\fI" + roffText(varname) + "\\fR"
		}
		switch f.DefValue {
		case "", "false", "0", "[]":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", tag, roffText(usage))
	})
}

// roffParagraphs keeps the blank lines between paragraphs of a description as paragraph breaks.
func roffParagraphs(s string) string {
	paragraphs := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paragraphs {
		paragraphs[i] = roffText(p)
	}
	return strings.Join(paragraphs, "\n.PP\n")
}

// roffText escapes text for roff: a backslash is written \e, and a line that starts with a control
// character (. or ') is kept as text with \&.
func roffText(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = "\\&" + l
		}
	}
	return strings.Join(lines, "\n")
}

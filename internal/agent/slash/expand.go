package slash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-dev/tandem/internal/agent/tool"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/infra/files"
	"github.com/tandem-dev/tandem/internal/infra/gitcmd"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
)

// Limits bound what a template's expansion may cost.
const (
	// shellTimeout bounds each !`cmd` block.
	shellTimeout = 30 * time.Second
	// shellOutput bounds the output of each !`cmd` block that goes into the prompt (head and tail kept).
	shellOutput = 32 * 1024
	// fileBytes bounds the content of each @file that goes into the prompt.
	fileBytes = 64 * 1024
)

var (
	// argument is one argument: a quoted string, or a run of anything but spaces and quotes.
	argument = regexp.MustCompile(`"[^"]*"|'[^']*'|[^\s"']+`)
	// shellBlock is a !`cmd` block.
	shellBlock = regexp.MustCompile("!`([^`]+)`")
	// fileRef is an @path reference; the character before the @ is checked apart (RE2 has no lookbehind).
	fileRef = regexp.MustCompile("@(\\.?[^\\s`,.]*(?:\\.[^\\s`,.]+)*)")
)

// File is a file an @path reference attached to the prompt.
type File struct {
	Rel     string // relative to the project root, slash-separated
	Abs     string
	Content string // what the model reads; cut at fileBytes
}

// Expanded is a command's template ready to be sent as a prompt.
type Expanded struct {
	Text  string
	Files []File
}

// splitArguments splits what the user typed after the command's name as a shell would, roughly:
// at spaces, keeping quoted strings whole (without their quotes).
func splitArguments(s string) []string {
	var out []string
	for _, a := range argument.FindAllString(s, -1) {
		if len(a) >= 2 && (a[0] == '"' || a[0] == '\'') && a[len(a)-1] == a[0] {
			a = a[1 : len(a)-1]
		}
		out = append(out, a)
	}
	return out
}

// substitute puts the arguments into a template as OpenCode does: $1…$n take one argument each and
// the highest placeholder takes the rest; $ARGUMENTS takes them all as typed. A template with no
// placeholder gets the arguments appended after a blank line.
func substitute(template, arguments string) string {
	args := splitArguments(arguments)
	last := 0
	for _, m := range placeholder.FindAllStringSubmatch(template, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil && n > last {
			last = n
		}
	}
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		n, err := strconv.Atoi(m[1:])
		if err != nil || n == 0 || n > len(args) {
			return ""
		}
		if n == last {
			return strings.Join(args[n-1:], " ")
		}
		return args[n-1]
	})
	usesAll := strings.Contains(out, "$ARGUMENTS")
	out = strings.ReplaceAll(out, "$ARGUMENTS", arguments)
	if last == 0 && !usesAll && strings.TrimSpace(arguments) != "" {
		out += "\n\n" + arguments
	}
	return out
}

// Expand turns a command and the arguments the user typed into a prompt: arguments substituted,
// each !`cmd` block replaced by the command's output (run in dir with bounded time and output), and
// each @path naming a file inside root attached with its content. A project's own command may run
// shell blocks only once the user trusts the project; otherwise Expand refuses with Forbidden. The
// blocks run confined by sb, as the agent's commands do (nil: unconfined).
func Expand(ctx context.Context, c Command, arguments, dir, root string, sb *sandbox.Policy) (Expanded, error) {
	text := substitute(c.Template, arguments)
	if blocks := shellBlock.FindAllStringSubmatchIndex(text, -1); len(blocks) > 0 {
		if !c.mayRun {
			return Expanded{}, errs.Named(errs.Forbidden, "UntrustedProjectError",
				"command %q (%s) runs shell commands, and the project's own files start no process until you trust the directory: run `tandem trust %s`",
				c.Name, c.file, root)
		}
		var b strings.Builder
		prev := 0
		for _, m := range blocks {
			b.WriteString(text[prev:m[0]])
			block := text[m[2]:m[3]]
			var out string
			var err error
			if args, ok := c.ownGit[block]; ok {
				out, err = runGit(ctx, dir, args)
			} else {
				out, err = runShell(ctx, dir, block, sb)
			}
			if err != nil {
				return Expanded{}, err
			}
			b.WriteString(out)
			prev = m[1]
		}
		b.WriteString(text[prev:])
		text = b.String()
	}
	return Expanded{Text: text, Files: attachments(text, dir, root)}, nil
}

// allow is the gate of a template's shell blocks: the user wrote (or trusted) them, so nothing is asked.
type allow struct{}

func (allow) Check(context.Context, tool.Ask) error { return nil }

// runShell runs one shell block through the bash tool (its own process group, killed on timeout or
// when ctx ends) and returns its output as the prompt shows it.
func runShell(ctx context.Context, dir, command string, sb *sandbox.Policy) (string, error) {
	bash := tool.NewBash(tool.Options{BashTimeout: shellTimeout, BashMaxTimeout: shellTimeout, OutputLimit: shellOutput, Sandbox: sb})
	input, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		return "", err
	}
	res, err := bash.Run(ctx, &tool.Call{Dir: dir, Input: input, Gate: allow{}})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", errs.E(errs.Invalid, "command block !`%s`: %v", command, err)
	}
	out, _ := res.Metadata["output"].(string)
	if exit, ok := res.Metadata["exit"].(int); !ok || exit != 0 || res.Metadata["sandboxRefused"] == true {
		// The note says why (exit code, timeout, a write the sandbox refused); the output so far
		// comes with it.
		out = res.Output
	}
	return strings.TrimRight(out, "\n"), nil
}

// runGit runs a built-in's git block as tandem's own git (gitcmd) and returns its output as the
// prompt shows it: the first shellOutput bytes, and git's error when it fails.
func runGit(ctx context.Context, dir string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, shellTimeout)
	defer cancel()
	repo, ok := files.GitRepo(dir)
	if !ok {
		repo = gitcmd.Repo{Dir: dir} // outside git: git says so
	}
	g, err := gitcmd.Open(ctx, repo)
	if err != nil {
		return err.Error(), nil
	}
	var stdout, stderr bounded
	stdout.limit, stderr.limit = shellOutput, shellOutput
	cmd := g.Command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil && ctx.Err() != context.DeadlineExceeded {
			return "", ctx.Err()
		}
		return strings.TrimRight(stdout.String()+stderr.String(), "\n") + "\n(git " + args[0] + ": " + err.Error() + ")", nil
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// bounded keeps the first limit bytes written to it and counts the rest.
type bounded struct {
	limit   int
	kept    []byte
	dropped int
}

func (b *bounded) Write(p []byte) (int, error) {
	n := min(len(p), b.limit-len(b.kept))
	b.kept = append(b.kept, p[:n]...)
	b.dropped += len(p) - n
	return len(p), nil
}

func (b *bounded) String() string {
	if b.dropped == 0 {
		return string(b.kept)
	}
	return strings.ToValidUTF8(string(b.kept), "") + fmt.Sprintf("\n... (%d more bytes not shown)", b.dropped)
}

// attachments finds the @path references of a prompt that name files inside root. A path is read
// relative to dir; one that leads outside root (.., an absolute path, a symlink) is left as text.
func attachments(text, dir, root string) []File {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []File
	for _, m := range fileRef.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > 0 {
			if prev := text[m[0]-1]; prev == '`' || prev == '_' || isAlnum(prev) {
				continue
			}
		}
		name := text[m[2]:m[3]]
		if name == "" || strings.HasPrefix(name, "~") || filepath.IsAbs(name) {
			continue
		}
		abs := filepath.Join(dir, filepath.FromSlash(name))
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(realRoot, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || seen[real] {
			continue
		}
		info, err := os.Stat(real)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		content, err := readBounded(real)
		if err != nil {
			continue
		}
		seen[real] = true
		out = append(out, File{Rel: filepath.ToSlash(rel), Abs: real, Content: content})
	}
	return out
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// readBounded reads at most fileBytes of a file, noting a cut; a binary file is named, not shown.
func readBounded(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, fileBytes+1))
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return "(binary file, not shown)", nil
	}
	if len(buf) > fileBytes {
		return strings.ToValidUTF8(string(buf[:fileBytes]), "") + "\n… (cut at " + strconv.Itoa(fileBytes) + " bytes)", nil
	}
	return string(buf), nil
}

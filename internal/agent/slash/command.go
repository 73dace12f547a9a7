// Package slash holds slash commands: prompt templates a client offers by name (the TUI's /init,
// /review, or a project's own /hello). They come from tandem's built-ins, the `command` key of the
// configuration and Markdown files under command/ directories, and run as a prompt in a session
// once their template is expanded (arguments, shell output, files).
package slash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/infra/config"
)

// Command is a slash command a client can offer: its wire form, and how tandem runs it.
type Command struct {
	api.Command

	// mayRun says whether the template's !`cmd` blocks may run: true for tandem's own commands and
	// the user's, and for a project's files only once the user trusts the project.
	mayRun bool
	// ownGit maps the text of a built-in's !`git …` blocks to the arguments tandem runs them with,
	// as its own git (gitcmd), not through a shell: /review reads a repository nobody trusted yet,
	// so its git must not start the programs that repository's configuration names.
	ownGit map[string][]string
	// file is where the command was defined, for error messages ("" for built-ins and config).
	file string
}

// builtins are tandem's own commands, as OpenCode offers /init and /review.
func builtins() []Command {
	return []Command{
		{Command: api.Command{
			Name:        "init",
			Description: "create or update AGENTS.md",
			Template: `Create or update AGENTS.md at the root of this project: a short guide for the coding agents that work in it.

First look at the project: its build and package files, README, CI configuration, and any existing AGENTS.md, CLAUDE.md, .cursorrules or .github/copilot-instructions.md. Then write down:

1. How to build, lint and test, and in particular how to run one single test.
2. The code style the project follows: formatting, imports, types, naming, error handling.
3. Whatever a newcomer would otherwise get wrong.

Keep it to about 20 to 40 lines. When AGENTS.md exists, improve it instead of starting over, keeping what is still true.
$ARGUMENTS`,
		}},
		{Command: api.Command{
			Name:        "review",
			Description: "review the uncommitted changes",
			Template: "Review the uncommitted changes of this project as a careful senior engineer would.\n\n" +
				"What git reports as changed:\n!`git status --short`\n\n" +
				"The changes against HEAD:\n!`git diff HEAD`\n\n" +
				"Look for bugs, missed edge cases, security problems, missing tests and unclear code, and read the surrounding " +
				"code where the diff alone does not tell. Report what you find by file and line, most important first, and say " +
				"plainly when the changes look right. Do not change any file.\n$ARGUMENTS",
		},
			ownGit: map[string][]string{
				"git status --short": {"status", "--short"},
				"git diff HEAD":      {"diff", "HEAD"},
			},
		},
	}
}

// Sources says where a directory's commands are read from.
type Sources struct {
	// Config is the merged configuration seen from the directory: its `command` key.
	Config config.Config
	// UserDir is the user's configuration directory (config.UserDir): its command/ files.
	UserDir string
	// Trusted says whether the user trusts the project: only then do the project's files run shell.
	Trusted bool
	// Skipped is told of each command that cannot be read (a broken file or entry): it is left
	// out, and the others are listed.
	Skipped func(error)
}

// Load lists the commands of the project in dir, by name. Later sources replace earlier ones of
// the same name: tandem's built-ins, the user's command files, the configuration's `command` key,
// then the project's `.opencode/command/` and `.tandem/command/` files (`commands/` too), from the
// work tree's root down to dir.
func Load(dir string, src Sources) ([]Command, error) {
	byName := map[string]Command{}
	add := func(cmds []Command) {
		for _, c := range cmds {
			byName[c.Name] = c
		}
	}
	for _, c := range builtins() {
		c.mayRun = true
		byName[c.Name] = c
	}
	if src.UserDir != "" {
		for _, sub := range []string{"command", "commands"} {
			add(readDir(filepath.Join(src.UserDir, sub), true, "", src.skipped))
		}
	}
	cmds, err := fromConfig(src.Config, src.skipped)
	if err != nil {
		return nil, err
	}
	add(cmds)
	dirs := projectDirs(dir)
	for _, d := range dirs {
		for _, base := range []string{".opencode", ".tandem"} {
			for _, sub := range []string{"command", "commands"} {
				add(readDir(filepath.Join(d, base, sub), src.Trusted, dirs[0], src.skipped))
			}
		}
	}
	out := make([]Command, 0, len(byName))
	for _, c := range byName {
		c.Source = "command"
		c.Hints = hints(c.Template)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (src Sources) skipped(err error) {
	if src.Skipped != nil {
		src.Skipped(err)
	}
}

// projectDirs lists the directories from the work tree's root (the nearest one holding .git) down
// to dir; outside git, only dir.
func projectDirs(dir string) []string {
	dirs := []string{dir}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return []string{dir}
		}
		d = parent
		dirs = append(dirs, d)
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// configCommand is one entry of the configuration's `command` key, as OpenCode's schema has it.
type configCommand struct {
	Template    string `json:"template"`
	Description string `json:"description"`
	Agent       string `json:"agent"`
	Model       string `json:"model"`
	Subtask     bool   `json:"subtask"`
}

func fromConfig(cfg config.Config, skip func(error)) ([]Command, error) {
	if len(cfg.Document) == 0 {
		return nil, nil
	}
	var doc struct {
		Command map[string]json.RawMessage `json:"command"`
	}
	if err := json.Unmarshal(cfg.Document, &doc); err != nil {
		return nil, fmt.Errorf("command: read the configuration: %w", err)
	}
	var out []Command
	for name, raw := range doc.Command {
		var c configCommand
		if err := json.Unmarshal(raw, &c); err != nil {
			skip(fmt.Errorf("configuration: command %q: %w", name, err))
			continue
		}
		if strings.TrimSpace(c.Template) == "" {
			skip(fmt.Errorf("configuration: command %q: a template is required", name))
			continue
		}
		out = append(out, Command{Command: api.Command{Name: name, Description: c.Description, Agent: c.Agent, Model: c.Model, Subtask: c.Subtask, Template: c.Template}, mayRun: true})
	}
	return out, nil
}

// frontmatter is what a command file may say before its template.
type frontmatter struct {
	Description string `yaml:"description"`
	Agent       string `yaml:"agent"`
	Model       string `yaml:"model"`
	Subtask     bool   `yaml:"subtask"`
}

// readDir reads every *.md file under root; a file's name without .md (and its subdirectory, as
// git/commit) names its command. A missing root holds no commands; a file that cannot be read is
// skipped. With confine set (a project's files), a file whose real path leads outside that
// directory (a symbolic link to ~/.ssh/id_rsa) is skipped too: a repository names only its own files.
func readDir(root string, mayRun bool, confine string, skip func(error)) []Command {
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	var out []Command
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			skip(fmt.Errorf("command files: %w", err))
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if confine != "" && !inside(confine, path) {
			skip(fmt.Errorf("command file %s: it leads outside the project", path))
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			skip(fmt.Errorf("command file: %w", err))
			return nil
		}
		c, err := parseFile(raw)
		if err != nil {
			skip(fmt.Errorf("command file %s: %w", path, err))
			return nil
		}
		c.Name = filepath.ToSlash(strings.TrimSuffix(rel, ".md"))
		c.mayRun, c.file = mayRun, path
		out = append(out, c)
		return nil
	})
	if err != nil {
		skip(fmt.Errorf("command files: %w", err))
	}
	return out
}

// inside reports whether path, its symbolic links followed, lies within dir.
func inside(dir, path string) bool {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(realDir, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// parseFile splits a command file into its YAML frontmatter (between --- lines, optional) and its
// template.
func parseFile(raw []byte) (Command, error) {
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	body := string(raw)
	var fm frontmatter
	if rest, ok := strings.CutPrefix(body, "---\n"); ok {
		head, tail, found := strings.Cut(rest, "\n---")
		if !found {
			return Command{}, fmt.Errorf("the frontmatter opened by --- is never closed")
		}
		if err := yaml.Unmarshal([]byte(head), &fm); err != nil {
			return Command{}, fmt.Errorf("frontmatter: %w", err)
		}
		// The rest of the closing line, then the template.
		if _, after, ok := strings.Cut(tail, "\n"); ok {
			body = after
		} else {
			body = ""
		}
	}
	return Command{Command: api.Command{Description: fm.Description, Agent: fm.Agent, Model: fm.Model, Subtask: fm.Subtask, Template: strings.TrimSpace(body)}}, nil
}

var placeholder = regexp.MustCompile(`\$(\d+)`)

// hints lists the placeholders a template uses: $1, $2, … in order, then $ARGUMENTS.
func hints(template string) []string {
	seen := map[int]bool{}
	var nums []int
	for _, m := range placeholder.FindAllStringSubmatch(template, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n == 0 || seen[n] {
			continue
		}
		seen[n] = true
		nums = append(nums, n)
	}
	sort.Ints(nums)
	out := make([]string, 0, len(nums)+1)
	for _, n := range nums {
		out = append(out, "$"+strconv.Itoa(n))
	}
	if strings.Contains(template, "$ARGUMENTS") {
		out = append(out, "$ARGUMENTS")
	}
	return out
}

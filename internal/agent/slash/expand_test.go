package slash

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/errs"
)

func TestSubstitute(t *testing.T) {
	tests := []struct {
		name, template, arguments, want string
	}{
		{"numbered placeholders take one argument each and the last takes the rest", "a=$1 b=$2", "x y z", "a=x b=y z"},
		{"quoted arguments stay whole without their quotes", "a=$1 b=$2", `"one two" 'three'`, "a=one two b=three"},
		{"missing arguments become empty", "a=$1 b=$2", "x", "a=x b="},
		{"$ARGUMENTS is what was typed", "all: $ARGUMENTS", `x "y z"`, `all: x "y z"`},
		{"a template without placeholders gets the arguments appended", "Do it.", "now please", "Do it.\n\nnow please"},
		{"a template without placeholders and no arguments is unchanged", "Do it.", "  ", "Do it."},
		{"$0 is not a placeholder", "cost $0 and $1", "x", "cost  and x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := substitute(tt.template, tt.arguments); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		name, raw string
		want      Command
		err       string
	}{
		{"frontmatter and body", "---\ndescription: d\nagent: plan\nmodel: p/m\nsubtask: true\n---\nBody $1\n",
			Command{Command: api.Command{Description: "d", Agent: "plan", Model: "p/m", Subtask: true, Template: "Body $1"}}, ""},
		{"no frontmatter", "Just a body\n", Command{Command: api.Command{Template: "Just a body"}}, ""},
		{"CRLF line ends", "---\r\ndescription: d\r\n---\r\nBody\r\n", Command{Command: api.Command{Description: "d", Template: "Body"}}, ""},
		{"an unclosed frontmatter", "---\ndescription: d\nBody\n", Command{}, "never closed"},
		{"frontmatter that is not YAML", "---\ndescription: [x\n---\nBody\n", Command{}, "frontmatter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFile([]byte(tt.raw))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestHints(t *testing.T) {
	if got := hints("$2 then $1, $2 again, $ARGUMENTS"); !slices.Equal(got, []string{"$1", "$2", "$ARGUMENTS"}) {
		t.Fatalf("got %q", got)
	}
	if got := hints("nothing"); got == nil || len(got) != 0 {
		t.Fatalf("got %#v, want an empty list", got)
	}
}

func TestExpand(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for name, content := range map[string]string{"a.txt": "alpha\n", "sub/b.md": "beta\n", "bin.dat": "x\x00y"} {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("files inside the project are attached, others left as text", func(t *testing.T) {
		c := Command{Command: api.Command{Name: "x", Template: "see @a.txt, @sub/b.md, @bin.dat, @link, @../x, @/etc/passwd, me@a.txt and `@a.txt`"}}
		got, err := Expand(ctx, c, "", root, root, nil)
		if err != nil {
			t.Fatal(err)
		}
		var rels []string
		for _, f := range got.Files {
			rels = append(rels, f.Rel)
		}
		if !slices.Equal(rels, []string{"a.txt", "sub/b.md", "bin.dat"}) {
			t.Fatalf("attached %q", rels)
		}
		if got.Files[0].Content != "alpha\n" || got.Files[2].Content != "(binary file, not shown)" {
			t.Fatalf("contents %+v", got.Files)
		}
	})

	t.Run("shell blocks run in the directory when the command may run them", func(t *testing.T) {
		c := Command{Command: api.Command{Name: "x", Template: "here: !`pwd`; failing: !`echo oops; exit 3`"}, mayRun: true}
		got, err := Expand(ctx, c, "", root, root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Text, "here: "+root+"; failing: oops") || !strings.Contains(got.Text, "exited with code 3") {
			t.Fatalf("text %q", got.Text)
		}
	})

	t.Run("shell blocks of a command that may not run them are refused before anything runs", func(t *testing.T) {
		marker := filepath.Join(root, "ran")
		c := Command{Command: api.Command{Name: "x", Template: "!`touch " + marker + "`"}, file: "x.md"}
		_, err := Expand(ctx, c, "", root, root, nil)
		if !errs.Is(err, errs.Forbidden) {
			t.Fatalf("err %v, want Forbidden", err)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatal("the block ran")
		}
	})
}

func TestLoadSkipsProjectFilesThatLeadOutside(t *testing.T) {
	project, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(project, ".opencode", "command")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "id_rsa"), filepath.Join(dir, "key.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.md"), []byte("fine"), 0o600); err != nil {
		t.Fatal(err)
	}
	var skipped []error
	cmds, err := Load(project, Sources{Skipped: func(err error) { skipped = append(skipped, err) }})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name)
		if strings.Contains(c.Template, "PRIVATE KEY") {
			t.Fatalf("the linked file's content was listed as %q", c.Name)
		}
	}
	if !slices.Equal(names, []string{"init", "ok", "review"}) || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "outside the project") {
		t.Fatalf("names %q, skipped %v", names, skipped)
	}
}

// TestBuiltinsRunGitAsTandemsOwn: every shell block of a built-in command (which runs before the
// user trusts the project) is git run as tandem's own, never a shell, and runs what it says.
func TestBuiltinsRunGitAsTandemsOwn(t *testing.T) {
	for _, c := range builtins() {
		t.Run("/"+c.Name+"'s blocks are all tandem's own git", func(t *testing.T) {
			for _, m := range shellBlock.FindAllStringSubmatch(c.Template, -1) {
				args, ok := c.ownGit[m[1]]
				if !ok {
					t.Errorf("!`%s` would run through a shell", m[1])
					continue
				}
				if want := strings.Fields(m[1]); want[0] != "git" || !slices.Equal(args, want[1:]) {
					t.Errorf("!`%s` runs git %q", m[1], args)
				}
			}
		})
	}
}

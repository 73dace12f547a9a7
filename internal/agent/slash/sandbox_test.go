package slash

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/testenv"
)

// TestMain lets this test binary serve as the sandbox helper, as the tandem binary does.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func TestATemplatesShellBlockIsConfinedLikeTheAgentsCommands(t *testing.T) {
	root, outside, temp := t.TempDir(), t.TempDir(), t.TempDir()
	p := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: temp}
	if st := p.Status(); !st.Enforced {
		testenv.Missing(t, "the kernel cannot confine commands: %s", st.Reason)
	}
	target := filepath.Join(outside, "f")
	// A redirection names its target, which counts as approved here (nothing is asked of a
	// template); cp's target is not named to anyone, so the kernel refuses it.
	c := Command{Command: api.Command{Name: "x", Template: "!`echo done > inside; cp inside " + target + "; cat inside`"}, mayRun: true}
	got, err := Expand(context.Background(), c, "", root, root, &p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("the block wrote %s outside the project", target)
	}
	if !strings.Contains(got.Text, "done") || !strings.Contains(got.Text, "The sandbox refused writing "+target) {
		t.Fatalf("text %q", got.Text)
	}
}

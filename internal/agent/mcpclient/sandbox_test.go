package mcpclient

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-dev/tandem/internal/infra/sandbox"
	"github.com/tandem-dev/tandem/internal/testenv"
)

func TestAConfinedLocalServerWritesOnlyItsDirectoryAndTheTempDirectory(t *testing.T) {
	dir, temp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	p := sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: temp}
	if st := p.Status(); !st.Enforced {
		testenv.Missing(t, "the kernel cannot confine commands: %s", st.Reason)
	}
	e := newEnv(t, Options{Directory: dir, Sandbox: &p})
	cfg, _ := stdioConfig(t)
	mustAdd(t, e, "go", cfg)
	for _, tt := range []struct {
		name, path string
		written    bool
	}{
		{"its working directory is writable", filepath.Join(dir, "inside"), true},
		{"the temp directory is writable", filepath.Join(temp, "tmp"), true},
		{"a directory outside is refused", filepath.Join(outside, "x"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": tt.path})
			res, err := e.m.CallTool(t.Context(), "go_write_file", args, call1)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(tt.path)
			if got := resultText(res); (got == "written") != tt.written || (statErr == nil) != tt.written {
				t.Fatalf("result %q, stat %v, want written=%v", got, statErr, tt.written)
			}
			if !tt.written && !strings.Contains(resultText(res), "permission denied") {
				t.Fatalf("result %q does not say permission denied", resultText(res))
			}
		})
	}
}

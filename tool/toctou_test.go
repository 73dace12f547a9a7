package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// swapGate approves every request, but first runs swap once when the edit is asked: what an attacker
// could do on the file system while a person reads the diff.
type swapGate struct {
	swap func()
	done bool
}

func (g *swapGate) Check(_ context.Context, ask Ask) error {
	if ask.Permission == "edit" && !g.done {
		g.done = true
		g.swap()
	}
	return nil
}

func TestASymlinkSwappedInDuringTheApprovalWaitIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		tool Tool
		prep string // content of sub/f.txt before the call ("" = absent)
		in   map[string]any
	}{
		{"write", Write{}, "", map[string]any{"filePath": "sub/f.txt", "content": "payload"}},
		{"edit", Edit{}, "old", map[string]any{"filePath": "sub/f.txt", "oldString": "old", "newString": "payload"}},
	} {
		t.Run(tt.name+" refuses to follow the swapped directory outside the project", func(t *testing.T) {
			project, outside := t.TempDir(), t.TempDir()
			sub := filepath.Join(project, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.prep != "" {
				for _, d := range []string{sub, outside} {
					if err := os.WriteFile(filepath.Join(d, "f.txt"), []byte(tt.prep), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			call, _ := newCall(t, project, tt.in)
			call.Gate = &swapGate{swap: func() {
				if err := os.RemoveAll(sub); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(outside, sub); err != nil {
					t.Error(err)
				}
			}}
			_, err := tt.tool.Run(context.Background(), call)
			if err == nil || !strings.Contains(err.Error(), "changed while waiting for approval") {
				t.Fatalf("Run = %v, want a refusal naming the change", err)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); strings.Contains(string(b), "payload") {
				t.Fatal("the write landed outside the project")
			}
		})
	}
}

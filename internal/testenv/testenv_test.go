package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissingFailsUnderCIAndSkipsElsewhere runs TestHelperMissing in a child test process, once as
// CI runs it and once as a developer does.
func TestMissingFailsUnderCIAndSkipsElsewhere(t *testing.T) {
	tests := []struct {
		name     string
		ci       string
		wantFail bool
		says     string
	}{
		{"under CI a missing dependency fails the test", "true", true, "missing dependency (CI must install it): frobnicator-that-does-not-exist is not on PATH"},
		{"elsewhere it skips with the reason", "", false, "skipped, missing dependency: frobnicator-that-does-not-exist is not on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMissing$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "TESTENV_HELPER=1", "CI="+tt.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tt.wantFail {
				t.Fatalf("child failed = %v, want %v:\n%s", failed, tt.wantFail, out)
			}
			if !strings.Contains(string(out), tt.says) {
				t.Fatalf("child output lacks %q:\n%s", tt.says, out)
			}
		})
	}
}

func TestHelperMissing(t *testing.T) {
	if os.Getenv("TESTENV_HELPER") != "1" {
		t.Skip("helper for TestMissingFailsUnderCIAndSkipsElsewhere")
	}
	Program(t, "frobnicator-that-does-not-exist", "no way to install it")
	t.Error("Program returned for a missing program")
}

func TestRecvReturnsWhatArrivesAndReportsAClose(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, ok := Recv(t, ch, "a value"); v != 7 || !ok {
		t.Fatalf("Recv = %d, %v", v, ok)
	}
	close(ch)
	if _, ok := Recv(t, ch, "the close"); ok {
		t.Fatal("Recv reported a closed channel as open")
	}
}

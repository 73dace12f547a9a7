// Package sandbox confines the commands tandem runs for the agent with the kernel, so that what a
// command can do is bounded by what a person approved, whatever its text hides from the parser
// that decided what to ask.
//
// Start confines (with Linux Landlock) a thread of tandem's own that lives only to fork the
// command and then ends; the rest of tandem is never restricted. Command instead re-executes
// tandem's own binary with a marker argument (Main recognises it) as a helper that restricts
// itself and then execs the command, for callers that need an *exec.Cmd to start themselves.
// main, and the TestMain of every package whose tests run commands, call Main before anything else.
//
// Policy "workspace-write" lets a command read anywhere and write only in the project directory,
// the temp directory and the directories an approved request named; "read-only" writes only the
// temp directory; "off" runs commands unconfined. tandem's data and configuration directories are
// never writable by a command. Where the kernel cannot enforce the policy (no Landlock, or not
// Linux), Status says so and the caller asks a person for every command instead.
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/tandem-dev/tandem/internal/infra/process"
)

// Mode is how much a command may write.
type Mode string

const (
	// WorkspaceWrite: the project directory, the temp directory and approved directories.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly: the temp directory and devices only.
	ReadOnly Mode = "read-only"
	// Off: no confinement.
	Off Mode = "off"
)

// Modes lists the modes from loosest to strictest.
var Modes = []Mode{Off, WorkspaceWrite, ReadOnly}

// ParseMode reads a mode as the configuration writes it; "" is the default, workspace-write.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return WorkspaceWrite, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("sandbox must be \"workspace-write\", \"read-only\" or \"off\", got %q", s)
}

// Stricter returns the stricter of two modes.
func Stricter(a, b Mode) Mode {
	if slices.Index(Modes, a) >= slices.Index(Modes, b) {
		return a
	}
	return b
}

// Policy is what every confined command may do.
type Policy struct {
	Mode Mode
	// DenyNetwork refuses TCP connect and bind (and UDP from Landlock ABI 10); it needs Landlock
	// ABI 4. Without it the network is as open as tandem's own.
	DenyNetwork bool
	// Protected are never writable, even when they lie inside a writable directory: tandem's data,
	// state and configuration directories.
	Protected []string
	// TempDir is writable in every confined mode; empty means os.TempDir().
	TempDir string
	// Writable are more directories every command may write in workspace-write mode: the user's
	// choice (a build cache), as absolute paths.
	Writable []string
}

// Status is what the running kernel enforces of a policy: for the log, the banner and GET /config.
type Status struct {
	Mode     Mode   `json:"mode"`
	Network  string `json:"network"`  // "allowed", "denied", or "not enforced"
	Enforced bool   `json:"enforced"` // everything the policy says is enforced
	// Mechanism names what enforces it ("landlock"); empty when nothing does.
	Mechanism string `json:"mechanism,omitempty"`
	// ABI is the kernel's Landlock ABI version (0: none).
	ABI int `json:"abi"`
	// Reason says why the policy is not (fully) enforced.
	Reason string `json:"reason,omitempty"`
}

// Confines reports whether commands run through the helper.
func (p Policy) Confines() bool { return p.Mode != Off && p.Mode != "" && kernelABI() > 0 }

// Status reports what the kernel enforces of p.
func (p Policy) Status() Status {
	st := Status{Mode: p.Mode, Network: "allowed", Enforced: true}
	if p.DenyNetwork {
		st.Network = "denied"
	}
	if p.Mode == Off || p.Mode == "" {
		st.Mode = Off
		return st
	}
	abi := kernelABI()
	st.ABI = abi
	switch {
	case abi == 0:
		st.Enforced = false
		st.Reason = unsupported()
		if p.DenyNetwork {
			st.Network = "not enforced"
		}
	case p.DenyNetwork && abi < 4:
		st.Mechanism = "landlock"
		st.Enforced = false
		st.Network = "not enforced"
		st.Reason = fmt.Sprintf("denying the network needs Landlock ABI 4, this kernel has ABI %d", abi)
	default:
		st.Mechanism = "landlock"
	}
	return st
}

// String is the one line the banner and the log show.
func (s Status) String() string {
	if s.Mode == Off {
		return "off (commands run unconfined)"
	}
	if !s.Enforced {
		return fmt.Sprintf("%s NOT ENFORCED: %s; every command is asked for", s.Mode, s.Reason)
	}
	return fmt.Sprintf("%s, network %s (Landlock ABI %d)", s.Mode, s.Network, s.ABI)
}

// spec is what the helper receives: everything it needs to build the ruleset.
type spec struct {
	Mode        Mode     `json:"mode"`
	Write       []string `json:"write,omitempty"`
	Temp        string   `json:"temp"`
	Protected   []string `json:"protected,omitempty"`
	DenyNetwork bool     `json:"denyNetwork,omitempty"`
}

// HelperArg marks a process started as the sandbox helper.
const HelperArg = "__tandem_sandbox_exec"

// Command returns a command that runs name with args under p, through the helper: for callers
// that hand the *exec.Cmd to code that starts it (an MCP client). In workspace-write mode the
// directories in writable (the project's and those an approved request named) may be written,
// besides the temp directory. When p does not confine (off, or the kernel cannot), it is a plain
// command: the caller has asked a person already.
func (p Policy) Command(writable []string, name string, args ...string) (*exec.Cmd, error) {
	if !p.Confines() {
		return exec.Command(name, args...), nil
	}
	raw, err := json.Marshal(p.spec(writable))
	if err != nil {
		return nil, err
	}
	exe, err := self()
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding tandem's own binary: %w", err)
	}
	return exec.Command(exe, append([]string{HelperArg, string(raw), name}, args...)...), nil
}

// Start starts cmd (a plain exec.Command) confined by p as Command would, writable as there, but
// without the helper: the command starts about as fast as an unconfined one. When p does not
// confine, it is cmd.Start.
func (p Policy) Start(cmd *exec.Cmd, writable []string) error {
	if !p.Confines() {
		return cmd.Start()
	}
	return p.spec(writable).start(cmd)
}

// spec is what a command confined by p with writable may do.
func (p Policy) spec(writable []string) spec {
	s := spec{Mode: p.Mode, Temp: p.tempDir(), Protected: p.Protected, DenyNetwork: p.DenyNetwork}
	if p.Mode == WorkspaceWrite {
		for _, w := range append(slices.Clone(p.Writable), writable...) {
			if filepath.IsAbs(w) && !slices.Contains(s.Write, filepath.Clean(w)) {
				s.Write = append(s.Write, filepath.Clean(w))
			}
		}
	}
	return s
}

// WritableDirs is what a confined command may write, for the note that explains a refusal: the
// temp directory, the user's writable directories and those given to Command (the protected
// directories inside them aside).
func (p Policy) WritableDirs(writable []string) []string {
	out := []string{p.tempDir()}
	if p.Mode == WorkspaceWrite {
		out = append(append(out, p.Writable...), writable...)
	}
	return out
}

func (p Policy) tempDir() string {
	if p.TempDir != "" {
		return filepath.Clean(p.TempDir)
	}
	return filepath.Clean(os.TempDir())
}

// Main runs the sandbox helper when this process was started as one; it then never returns. Call
// it first in main, and in the TestMain of packages whose tests run commands (their test binary is
// the helper there). Otherwise it keeps whatever descriptors this process inherited beyond
// stderr from the commands it will start (process.KeepInheritedDescriptors).
func Main() {
	if len(os.Args) < 4 || os.Args[1] != HelperArg {
		process.KeepInheritedDescriptors()
		return
	}
	var s spec
	if err := json.Unmarshal([]byte(os.Args[2]), &s); err != nil {
		fail(fmt.Errorf("reading the policy: %w", err))
	}
	fail(s.exec(os.Args[3:]))
}

// fail reports why the command did not run, with the shell's exit status for "cannot execute".
func fail(err error) {
	fmt.Fprintf(os.Stderr, "tandem sandbox: the command did not run: %v\n", err)
	os.Exit(126)
}

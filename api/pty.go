package api

// PtyStatus is whether the PTY's process still runs.
type PtyStatus string

// The statuses OpenCode reports.
const (
	PtyStatusRunning PtyStatus = "running"
	PtyStatusExited  PtyStatus = "exited"
)

// PtyInfo is a PTY as clients see it (OpenCode's Pty schema).
type PtyInfo struct {
	ID      string    `json:"id" required:"true" pattern:"^pty"`
	Title   string    `json:"title" required:"true"`
	Command string    `json:"command" required:"true"`
	Args    []string  `json:"args" required:"true" nullable:"false"`
	Cwd     string    `json:"cwd" required:"true"`
	Status  PtyStatus `json:"status" required:"true" enum:"running,exited"`
	Pid     int       `json:"pid" required:"true" minimum:"0"`
	// ExitCode is set once the process has exited; a process killed by a signal reports 128+signal,
	// as shells do, because the schema admits no negative code.
	ExitCode *int `json:"exitCode,omitempty" minimum:"0" nullable:"false"`
}

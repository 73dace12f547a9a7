package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Paths are where tandem keeps its files.
type Paths struct {
	Data   string // the database
	State  string // the state file with the URL and password, and the log
	Config string // the user config directory
}

// ResolvePaths finds tandem's directories (dataDir, else $TANDEM_DATA_DIR, else the XDG ones) and
// creates the data and state directories.
func ResolvePaths(dataDir string) (Paths, error) {
	home, _ := os.UserHomeDir()
	xdg := func(env, fallback string) string {
		if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "tandem")
		}
		return filepath.Join(home, fallback, "tandem")
	}
	p := Paths{Data: dataDir, State: xdg("XDG_STATE_HOME", ".local/state"), Config: xdg("XDG_CONFIG_HOME", ".config")}
	if p.Data == "" {
		p.Data = os.Getenv("TANDEM_DATA_DIR")
	}
	if p.Data == "" {
		p.Data = xdg("XDG_DATA_HOME", ".local/share")
	}
	for _, d := range []string{p.Data, p.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Paths{}, fmt.Errorf("cannot create the directory %s: %w; make its parent writable by this user, or choose another data directory with --data-dir or TANDEM_DATA_DIR", d, err)
		}
	}
	return p, nil
}

// ParseLevel reads a --log-level value.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("--log-level: expected DEBUG, INFO, WARN or ERROR, got %q", s)
	}
	return l, nil
}

// OpenLogger logs to the state directory's tandem.log, or to stderr with printLogs; the returned
// function closes the file.
func OpenLogger(p Paths, printLogs bool, stderr io.Writer, level slog.Level) (*slog.Logger, func(), error) {
	opts := &slog.HandlerOptions{Level: level}
	if printLogs {
		return slog.New(slog.NewTextHandler(stderr, opts)), func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(p.State, "tandem.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open log file: %w", err)
	}
	return slog.New(slog.NewTextHandler(f, opts)), func() { f.Close() }, nil
}

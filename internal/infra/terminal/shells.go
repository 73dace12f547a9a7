package terminal

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Shell is an entry of GET /pty/shells (OpenCode's shape).
type Shell struct {
	Path string `json:"path" required:"true"`
	Name string `json:"name" required:"true"`
	// Acceptable is false for shells that cannot run POSIX command lines or that refuse logins
	// (OpenCode rejects fish and nu), so clients can choose a sensible default.
	Acceptable bool `json:"acceptable" required:"true"`
}

var unacceptableShells = map[string]bool{"fish": true, "nu": true, "nologin": true, "false": true}

// Shells lists the system's shells (from /etc/shells) that exist and are executable, in file order.
func (m *Manager) Shells() []Shell {
	data, err := os.ReadFile(m.opts.ShellsFile)
	if err != nil {
		m.log.Debug("cannot read shells file", "path", m.opts.ShellsFile, "err", err)
		return []Shell{}
	}
	shells := []Shell{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || seen[line] || !filepath.IsAbs(line) {
			continue
		}
		seen[line] = true
		st, err := os.Stat(line)
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		name := filepath.Base(line)
		shells = append(shells, Shell{Path: line, Name: name, Acceptable: !unacceptableShells[name]})
	}
	return shells
}

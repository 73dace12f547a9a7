package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tandem-dev/tandem/internal/infra/config"
)

// TrustList prints the user's trusted project directories, one a line.
func TrustList(w io.Writer) error {
	dirs, err := config.TrustedDirs(os.Getenv)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		fmt.Fprintln(w, d)
	}
	return nil
}

// Trust adds dir (relative to the working directory) to the user's trusted project directories,
// or removes it, and says so on w with the file it changed.
func Trust(w io.Writer, dir string, remove bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	change, done := config.Trust, "trusted"
	if remove {
		change, done = config.Untrust, "no longer trusted"
	}
	file, err := change(os.Getenv, abs)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s (%s)\n", done, abs, file)
	return nil
}

// TrustCommand is `tandem trust [DIR]` with its flags: list the trusted directories, or trust (or
// with remove, stop trusting) DIR, the current directory when none is given.
func TrustCommand(w io.Writer, args []string, list, remove bool) error {
	if list {
		if len(args) > 0 || remove {
			return fmt.Errorf("--list takes no directory and no --remove")
		}
		return TrustList(w)
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	return Trust(w, dir, remove)
}

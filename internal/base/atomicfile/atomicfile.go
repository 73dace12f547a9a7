// Package atomicfile replaces files so that a crash, a power cut or a second writer never leaves a
// mix: a reader finds the old file or the new one, whole.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// Write replaces the file at path with data and gives it the permission bits perm (the umask does
// not narrow them). The data goes to a temporary file of its own in the same directory, which is
// synced, renamed over path, and the directory synced, so that once Write returns the new file
// survives a power cut, and until then the old one is there. A failed Write leaves the old file as
// it was and no temporary file behind. The directory must exist.
func Write(path string, data []byte, perm fs.FileMode) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteIn(root, filepath.Base(path), data, perm)
}

// WriteIn is Write for name, a path inside root: the file, its temporary and the rename all stay
// inside root, so a symbolic link cannot lead the write out of it.
func WriteIn(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	return write(root, name, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Perm returns the permission bits of the file at path, or def when there is no such file: what
// a caller passes to Write to keep the mode a person gave the file.
func Perm(path string, def fs.FileMode) fs.FileMode {
	if info, err := os.Stat(path); err == nil {
		return info.Mode().Perm()
	}
	return def
}

// PermIn is Perm for name inside root.
func PermIn(root *os.Root, name string, def fs.FileMode) fs.FileMode {
	if info, err := root.Stat(name); err == nil {
		return info.Mode().Perm()
	}
	return def
}

// write is WriteIn with the content written by fill.
func write(root *os.Root, name string, perm fs.FileMode, fill func(*os.File) error) (err error) {
	dir, base := filepath.Split(name)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	// Hidden, and named for the file and for tandem: a crash between create and rename leaves it,
	// and whoever finds it can tell what it was.
	tmpName := filepath.Join(dir, "."+base+".tandem-"+hex.EncodeToString(suffix[:])+".tmp")
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = root.Remove(tmpName)
		}
	}()
	err = fill(tmp)
	if err == nil {
		err = tmp.Chmod(perm) // the umask narrowed what OpenFile made
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Rename(tmpName, name); err != nil {
		return err
	}
	renamed = true
	return syncDir(root, dir)
}

// syncDir makes a rename in dir durable. Windows cannot open a directory to sync it: there the
// rename is as durable as the file system makes it.
func syncDir(root *os.Root, dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil // a file system that cannot sync a directory (some network ones): the rename is done
	}
	return err
}

package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestWriteReplacesTheFileWithTheModeAskedFor(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps no permission bits")
	}
	for _, tc := range []struct {
		name    string
		old     []byte      // nil: no file yet
		oldPerm fs.FileMode // the old file's mode
		perm    func(path string) fs.FileMode
		want    fs.FileMode
	}{
		{"a new file gets the mode asked for", nil, 0, func(string) fs.FileMode { return 0o600 }, 0o600},
		{"the umask does not narrow the mode asked for", nil, 0, func(string) fs.FileMode { return 0o666 }, 0o666},
		{"a file replaced with Perm keeps the mode a person gave it", []byte("old"), 0o640,
			func(p string) fs.FileMode { return Perm(p, 0o644) }, 0o640},
		{"Perm of a file not there yet is the default", nil, 0, func(p string) fs.FileMode { return Perm(p, 0o644) }, 0o644},
		{"a replaced file can be given a narrower mode", []byte("old"), 0o644, func(string) fs.FileMode { return 0o600 }, 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if tc.old != nil {
				writeFile(t, path, tc.old, tc.oldPerm)
			}
			if err := Write(path, []byte("new"), tc.perm(path)); err != nil {
				t.Fatal(err)
			}
			assertContent(t, path, []byte("new"))
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != tc.want {
				t.Errorf("mode %v, want %v", got, tc.want)
			}
			assertEntries(t, dir, "state.json")
		})
	}
}

func TestWriteInStaysInsideTheRoot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string // written inside the root
		wantErr bool
	}{
		{"a file in a subdirectory is written there", "sub/notes.txt", false},
		{"a symbolic link out of the root is refused", "out/notes.txt", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rootDir, outside := t.TempDir(), t.TempDir()
			if err := os.Mkdir(filepath.Join(rootDir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(rootDir, "out")); err != nil {
				t.Skip("no symbolic links here:", err)
			}
			root, err := os.OpenRoot(rootDir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			err = WriteIn(root, tc.file, []byte("hello"), 0o644)
			if tc.wantErr {
				if err == nil {
					t.Fatal("the write went through the link")
				}
				assertEntries(t, outside)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertContent(t, filepath.Join(rootDir, tc.file), []byte("hello"))
			assertEntries(t, filepath.Join(rootDir, "sub"), "notes.txt")
		})
	}
}

func TestAFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	old := []byte(`{"version": 1}`)
	for _, tc := range []struct {
		name string
		// write fails to replace dir/state.json, which holds old (unless the case removes it)
		write func(t *testing.T, dir string) error
		want  []string // the entries of dir afterwards
	}{
		{"the content fails halfway, as a crash would cut it", func(t *testing.T, dir string) error {
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			return write(root, "state.json", 0o600, func(f *os.File) error {
				if _, err := f.Write([]byte(`{"vers`)); err != nil {
					return err
				}
				return errors.New("power cut")
			})
		}, []string{"state.json"}},
		{"the directory is read-only", func(t *testing.T, dir string) error {
			if runtime.GOOS == "windows" {
				t.Skip("Windows has no read-only directories")
			}
			if os.Geteuid() == 0 {
				t.Skip("root writes into read-only directories")
			}
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
			return Write(filepath.Join(dir, "state.json"), []byte("new"), 0o600)
		}, []string{"state.json"}},
		{"the path names a directory", func(t *testing.T, dir string) error {
			sub := filepath.Join(dir, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(sub, "keep"), old, 0o644)
			return Write(sub, []byte("new"), 0o600)
		}, []string{"state.json", "sub"}},
		{"the directory does not exist", func(t *testing.T, dir string) error {
			return Write(filepath.Join(dir, "missing", "state.json"), []byte("new"), 0o600)
		}, []string{"state.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			writeFile(t, path, old, 0o600)
			if err := tc.write(t, dir); err == nil {
				t.Fatal("the write succeeded")
			}
			assertContent(t, path, old)
			assertEntries(t, dir, tc.want...)
		})
	}
}

func TestConcurrentWritersNeverInterleave(t *testing.T) {
	const writers, rounds, size = 6, 20, 256 << 10
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	writeFile(t, path, bytes.Repeat([]byte{'a'}, size), 0o600)

	// Each writer writes a file of one byte value of its own; a reader checks every file it sees is
	// whole and one writer's.
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	stop := make(chan struct{})
	readerDone := make(chan []string)
	go func() {
		var bad []string
		for {
			select {
			case <-stop:
				readerDone <- bad
				return
			default:
			}
			b, err := os.ReadFile(path)
			if err != nil {
				bad = append(bad, err.Error())
				continue
			}
			if len(b) != size || bytes.Count(b, b[:1]) != size {
				bad = append(bad, "a file mixed or cut short")
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := bytes.Repeat([]byte{byte('b' + w)}, size)
			for range rounds {
				errs <- Write(path, data, 0o600)
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()
	select {
	case <-writersDone:
	case <-time.After(time.Minute):
		t.Fatal("the writers did not finish within a minute")
	}
	close(stop)
	var bad []string
	select {
	case bad = <-readerDone:
	case <-time.After(time.Minute):
		t.Fatal("the reader did not stop within a minute")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d reads saw no whole file, first: %s", len(bad), bad[0])
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || bytes.Count(b, b[:1]) != size || b[0] == 'a' {
		t.Errorf("the last file is not one writer's whole file")
	}
	assertEntries(t, dir, "state.json")
}

func writeFile(t *testing.T, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func assertContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", filepath.Base(path), got, want)
	}
}

// assertEntries checks that dir holds exactly want: no temporary file was left behind.
func assertEntries(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", filepath.Base(dir), got, want)
	}
}

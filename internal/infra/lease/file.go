package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FileName is the lease's file in a data directory. It is never removed: a process that opened the
// file before its removal would lock a file nobody else sees, and two processes would hold the lease.
const FileName = "tandem.lock"

// errHeld is what the platform's lock answers when another open file holds it.
var errHeld = errors.New("held by another process")

// File is the lease of a data directory: an exclusive lock on dir/tandem.lock that the operating
// system drops when the process ends, by exit or by crash, so a lease never outlives its holder. The
// file itself carries the owner's record (JSON), which the processes that are turned away read.
type File struct {
	mu   sync.Mutex
	f    *os.File // nil once released
	path string
}

var _ Lease = (*File)(nil)

// Acquire takes the lease of dir for the process pid, or returns a *HeldError naming its holder.
// Of any number of processes (or opens in one process) that try at once, exactly one succeeds.
func Acquire(dir string, pid int) (*File, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot write in the data directory %s: %w; make it writable by this user (and check free disk space), or choose another data directory with --data-dir or TANDEM_DATA_DIR", dir, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, errHeld) {
			return nil, &HeldError{Store: dir, Owner: ReadOwner(dir)}
		}
		return nil, fmt.Errorf("lease: lock %s: %w", path, err)
	}
	l := &File{f: f, path: path}
	// The record a crashed holder left is replaced at once, so nobody is sent to a dead server.
	if err := l.Announce(Owner{PID: pid, Since: time.Now().UTC()}); err != nil {
		_ = l.Release()
		return nil, err
	}
	return l, nil
}

// ReadOwner reads the owner record of dir's lease; it is zero when there is none or it is being
// written. It says nothing about whether the lease is held: only Acquire can tell.
func ReadOwner(dir string) Owner {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return Owner{}
	}
	return parseOwner(b)
}

// Announce replaces the owner record. The new record is written over the old one before the file
// is cut to its length, so a reader sees the old record, the new one, or (rarely) bytes that do not
// parse and read as "still starting" — never an empty file in between.
func (l *File) Announce(o Owner) error {
	body, err := json.Marshal(o)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("lease: announce after release")
	}
	if _, err := l.f.WriteAt(body, 0); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if err := l.f.Truncate(int64(len(body))); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	return nil
}

// Release empties the owner record and drops the lock.
func (l *File) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if uerr := unlock(l.f); err == nil {
		err = uerr
	}
	if cerr := l.f.Close(); err == nil { // closing the file drops an OS lock
		err = cerr
	}
	l.f = nil
	return err
}

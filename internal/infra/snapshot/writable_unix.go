//go:build unix

package snapshot

import "golang.org/x/sys/unix"

// writable reports whether this process may write in dir (access(2), which honours ACLs and
// read-only mounts without writing anything into the user's project).
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }

//go:build unix

package testenv

import (
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// postgresUser returns how PostgreSQL's programs are run: as the "postgres" user, which is given
// dir, when the test runs as root (PostgreSQL refuses root); as the test's user otherwise.
func postgresUser(dir string) (*syscall.SysProcAttr, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errMissing("PostgreSQL refuses to run as root and there is no postgres user (apt-get install postgresql)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

//go:build !unix

package testenv

import "syscall"

// postgresUser: PostgreSQL's programs run as the test's user.
func postgresUser(string) (*syscall.SysProcAttr, error) { return nil, nil }

//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// kernelABI is the running kernel's Landlock ABI version; 0 when Landlock is missing or disabled.
func kernelABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func unsupported() string {
	return "this Linux kernel has no Landlock (it needs 5.13 or later with the landlock LSM enabled)"
}

// self is the binary the helper runs from. /proc/self/exe still works when the file was replaced
// or removed by an upgrade while tandem runs.
func self() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// configs are go-landlock's configurations by ABI version; the kernel's own version is used as is,
// so nothing is silently downgraded (no BestEffort).
var configs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// devices may be opened for writing in every confined mode: what ordinary commands need.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// ruleset is the kernel ruleset of s for the running kernel: a file descriptor to close and the
// flags to restrict with.
func (s spec) ruleset() (int, uint32, error) {
	abi := kernelABI()
	if abi == 0 {
		return -1, 0, errors.New(unsupported())
	}
	cfg := configs[min(abi, len(configs))-1]
	cfg.Scoped = 0 // signals and abstract sockets stay as they are: the policy is about files
	// Without "network": "deny" the network is not handled. Below ABI 4 it cannot be: Status
	// reported the network as not enforced, so a person was asked for the command, and its files
	// are still confined.
	if !s.DenyNetwork {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.NewRulesetFD(s.rules(cfg)...)
	if err == nil && fd < 0 {
		err = errors.New("the kernel was given nothing to enforce") // never run unconfined silently
	}
	return fd, flags, err
}

// restrictThread confines the calling OS thread, which the caller has locked and never unlocks:
// the restriction and no_new_privs belong to the thread, pass to the processes it starts and stay
// across execve.
func restrictThread(fd int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// exec restricts this process (the helper) and replaces it with argv. It returns only on failure.
func (s spec) exec(argv []string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	fd, flags, err := s.ruleset()
	if err != nil {
		return err
	}
	// The other threads of the helper end with the exec.
	runtime.LockOSThread()
	if err := restrictThread(fd, flags); err != nil {
		return err
	}
	_ = unix.Close(fd)
	return syscall.Exec(path, argv, os.Environ())
}

// start starts cmd from a goroutine locked to an OS thread of its own, which is confined first:
// the process forked from it inherits the confinement, and no helper binary has to start (a
// re-exec of tandem costs its whole runtime and package initialisation, ~15 ms). The goroutine
// ends without unlocking, so the Go runtime ends the confined thread instead of reusing it; the
// rest of tandem is never confined. Because the thread ends, cmd must not ask for
// SysProcAttr.Pdeathsig: Linux sends it when the creating thread exits, which is at once.
func (s spec) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0 {
		return errors.New("sandbox: a command started by a confined thread cannot use Pdeathsig (the thread ends at once)")
	}
	fd, flags, err := s.ruleset()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := restrictThread(fd, flags); err != nil {
			started <- err
			return
		}
		started <- cmd.Start()
	}()
	return <-started
}

// rules grants reading everywhere, writing the writable directories (minus the protected ones),
// and the devices commands need.
func (s spec) rules(cfg landlock.Config) []landlock.Rule {
	handled := cfg.HandledAccessFS
	rules := []landlock.Rule{landlock.RODirs("/")}
	if handled&ll.AccessFSResolveUnix != 0 && !s.DenyNetwork {
		// Unix sockets (an ssh agent, docker) are connected to as before unless the network is denied.
		rules = append(rules, landlock.PathAccess(ll.AccessFSResolveUnix, "/"))
	}
	if handled&ll.AccessFSIoctlDev != 0 {
		rules = append(rules, landlock.PathAccess(ll.AccessFSIoctlDev, "/dev"))
	}
	fileRW := (ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate) & handled
	rules = append(rules, landlock.PathAccess(fileRW, devices...).IgnoreIfMissing())

	roots := []string{s.Temp, "/dev/shm"}
	if s.Mode == WorkspaceWrite {
		roots = append(roots, s.Write...)
	}
	protected := make([]string, 0, len(s.Protected))
	for _, p := range s.Protected {
		protected = append(protected, resolve(p))
	}
	var dirs, files []string
	for _, root := range roots {
		d, f := carve(resolve(root), protected)
		dirs, files = append(dirs, d...), append(files, f...)
	}
	if len(dirs) > 0 {
		dirRule := landlock.RWDirs(dirs...)
		if handled&ll.AccessFSRefer != 0 {
			dirRule = dirRule.WithRefer() // mv between directories of the project
		}
		rules = append(rules, dirRule.IgnoreIfMissing())
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(fileRW, files...).IgnoreIfMissing())
	}
	return rules
}

// resolve is p cleaned with its symlinks evaluated where it exists.
func resolve(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// carve returns what may be written of root: root itself when no protected directory lies inside
// it; otherwise each of its entries but the one leading to a protected directory (recursively), so
// that everything around tandem's data stays writable. Landlock grants whole hierarchies, so new
// files directly in root (or in a directory on the way) cannot be created then; existing files
// there can be written. A root inside a protected directory is not writable at all. Symbolic links
// get no rule: a write through one is judged where it lands.
func carve(root string, protected []string) (dirs, files []string) {
	inside := false
	for _, p := range protected {
		if within(p, root) {
			return nil, nil
		}
		if within(root, p) {
			inside = true
		}
	}
	if !inside {
		return []string{root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil
	}
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		switch {
		case slices.ContainsFunc(protected, func(pr string) bool { return within(pr, p) }):
		case e.IsDir():
			d, f := carve(p, protected)
			dirs, files = append(dirs, d...), append(files, f...)
		case e.Type().IsRegular():
			files = append(files, p)
		}
	}
	return dirs, files
}

// canWrite asks the kernel whether this (unconfined) process may write p.
func canWrite(p string) bool { return unix.Access(p, unix.W_OK) == nil }

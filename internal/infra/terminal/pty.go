// Package terminal runs pseudo-terminals for clients: a shell (or any command) in its own session, its
// output kept in a bounded scrollback addressed by absolute byte offsets, and any number of viewers
// that attach from a cursor and then follow the live output. It knows nothing about HTTP: the routes
// bridge a viewer to a WebSocket.
//
// Output is delivered as valid UTF-8 (see textDecoder); a cursor counts bytes of that output.
package terminal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	creackpty "github.com/creack/pty"

	"github.com/tandem-dev/tandem/api"
	"github.com/tandem-dev/tandem/internal/base/bus"
	"github.com/tandem-dev/tandem/internal/base/errs"
	"github.com/tandem-dev/tandem/internal/base/id"
	"github.com/tandem-dev/tandem/internal/infra/process"
)

// Status is whether the PTY's process still runs.
type Status = api.PtyStatus

// The statuses OpenCode reports.
const (
	Running = api.PtyStatusRunning
	Exited  = api.PtyStatusExited
)

// Info is a PTY as clients see it.
type Info = api.PtyInfo

// Size is a terminal window size in character cells.
type Size struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// CreateInput describes a PTY to start. Command, Args, Cwd, Title and Env are OpenCode's request
// fields; Directory is the project the PTY belongs to (its events carry it).
type CreateInput struct {
	Command string
	Args    []string
	Cwd     string // relative paths resolve against Directory; empty means Directory
	Title   string
	Env     map[string]string // merged over the server's environment
	// Directory is the project directory: the default and base of Cwd, and the directory of events.
	Directory string
	Size      *Size // initial window size; 24x80 when nil
}

// UpdateInput changes a PTY; nil fields are left alone.
type UpdateInput struct {
	Title *string
	Size  *Size
}

// Reasons a viewer's output channel is closed.
var (
	ErrExited   = errors.New("pty: process exited")
	ErrSlow     = errors.New("pty: viewer fell behind and was dropped")
	ErrShutdown = errors.New("pty: server shutting down")
)

// Options configure a Manager.
type Options struct {
	Bus *bus.Bus
	// Scrollback is how many bytes of output each PTY keeps for replay (default 2 MiB).
	Scrollback int
	// ViewerQueue is how many output chunks may wait for one viewer before it is dropped (default 512).
	ViewerQueue int
	Logger      *slog.Logger
	IDs         *id.Source
	// Now is the clock for ticket expiry (default time.Now).
	Now func() time.Time
	// ShellsFile lists the system's shells (default /etc/shells).
	ShellsFile string
	// TicketTTL is how long a connect ticket stays valid (default 60 s, as OpenCode).
	TicketTTL time.Duration
}

const (
	defaultScrollback  = 2 << 20
	defaultViewerQueue = 512
	defaultTicketTTL   = 60 * time.Second
	readChunk          = 32 << 10
	// drainGrace bounds how long output is still read after the process has exited and its session
	// has been killed; only a process that escaped the session while holding the terminal open can
	// make it expire.
	drainGrace = 2 * time.Second
)

// Manager owns every PTY of the server. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	ptys    map[string]*session
	tickets map[string]ticket
	closed  bool
}

// NewManager returns an empty Manager.
func NewManager(o Options) *Manager {
	if o.Scrollback <= 0 {
		o.Scrollback = defaultScrollback
	}
	if o.ViewerQueue <= 0 {
		o.ViewerQueue = defaultViewerQueue
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IDs == nil {
		o.IDs = id.NewSource()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ShellsFile == "" {
		o.ShellsFile = "/etc/shells"
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = defaultTicketTTL
	}
	return &Manager{
		opts:    o,
		log:     o.Logger,
		ptys:    make(map[string]*session),
		tickets: make(map[string]ticket),
	}
}

// session is one PTY: the process, its terminal and its viewers.
type session struct {
	m         *Manager
	id        string
	pid       int // leader of the process's session and group
	directory string
	cmd       *exec.Cmd
	tty       *os.File // master side, non-blocking so that Close interrupts a Read
	done      chan struct{}
	writeMu   sync.Mutex // one writer at a time, so a paste is never interleaved with keystrokes

	mu      sync.Mutex
	info    Info
	size    Size // the terminal's window size
	out     ring
	viewers map[*Viewer]struct{}
	exited  bool
}

// Create starts a PTY and publishes pty.created.
func (m *Manager) Create(ctx context.Context, in CreateInput) (Info, error) {
	cwd, err := resolveCwd(in.Directory, in.Cwd)
	if err != nil {
		return Info{}, err
	}
	command := strings.TrimSpace(in.Command)
	if command == "" && in.Command != "" {
		return Info{}, errs.E(errs.Invalid, "command must not be blank")
	}
	if command == "" {
		command = m.defaultShell()
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return Info{}, errs.E(errs.Invalid, "command not found: %s", command)
	}
	env, err := mergeEnv(os.Environ(), in.Env)
	if err != nil {
		return Info{}, err
	}
	ws := &creackpty.Winsize{Rows: 24, Cols: 80}
	if in.Size != nil {
		if err := validSize(*in.Size); err != nil {
			return Info{}, err
		}
		ws = &creackpty.Winsize{Rows: uint16(in.Size.Rows), Cols: uint16(in.Size.Cols)}
	}

	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return Info{}, errs.E(errs.Unavailable, "server is shutting down")
	}

	args := slices.Clone(in.Args)
	if args == nil {
		args = []string{}
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = command
	cmd.Dir = cwd
	cmd.Env = env
	// StartWithSize makes the child a session leader (Setsid) with the terminal as its controlling tty.
	master, err := creackpty.StartWithSize(cmd, ws)
	if err != nil {
		return Info{}, errs.E(errs.Invalid, "cannot start %s: %v", command, err)
	}
	tty, err := pollable(master)
	if err != nil {
		process.KillSession(cmd.Process.Pid)
		_ = cmd.Wait()
		return Info{}, &errs.Error{Kind: errs.Internal, Message: "cannot prepare the terminal", Err: err}
	}

	ptyID := m.opts.IDs.New(id.Pty)
	title := in.Title
	if title == "" {
		title = "Terminal " + ptyID[len(ptyID)-4:]
	}
	s := &session{
		m:         m,
		id:        ptyID,
		pid:       cmd.Process.Pid,
		directory: in.Directory,
		cmd:       cmd,
		tty:       tty,
		done:      make(chan struct{}),
		info: Info{
			ID: ptyID, Title: title, Command: command, Args: args, Cwd: cwd,
			Status: Running, Pid: cmd.Process.Pid,
		},
		size:    Size{Rows: int(ws.Rows), Cols: int(ws.Cols)},
		out:     newRing(m.opts.Scrollback),
		viewers: make(map[*Viewer]struct{}),
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		process.KillSession(cmd.Process.Pid)
		_ = cmd.Wait()
		_ = tty.Close()
		return Info{}, errs.E(errs.Unavailable, "server is shutting down")
	}
	m.ptys[ptyID] = s
	m.mu.Unlock()

	info := s.snapshot()
	m.publish(s.directory, api.EventPtyCreated, api.PtyChanged{Info: info})
	m.log.InfoContext(ctx, "pty started", "id", ptyID, "command", command, "pid", info.Pid, "cwd", cwd)
	go s.run()
	return info, nil
}

func resolveCwd(directory, cwd string) (string, error) {
	if cwd == "" {
		cwd = directory
	}
	if cwd == "" {
		return "", errs.E(errs.Invalid, "cwd is required when no project directory is known")
	}
	if !filepath.IsAbs(cwd) {
		if directory == "" {
			return "", errs.E(errs.Invalid, "cwd must be absolute: %s", cwd)
		}
		cwd = filepath.Join(directory, cwd)
	}
	st, err := os.Stat(cwd)
	if err != nil {
		return "", errs.E(errs.Invalid, "cwd does not exist: %s", cwd)
	}
	if !st.IsDir() {
		return "", errs.E(errs.Invalid, "cwd is not a directory: %s", cwd)
	}
	return filepath.Clean(cwd), nil
}

// mergeEnv lays the request's variables over the server's environment, with TERM=xterm-256color
// (what browser terminals emulate) unless the request names its own TERM.
func mergeEnv(base []string, extra map[string]string) ([]string, error) {
	vars := make(map[string]string, len(base)+len(extra)+1)
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			set(k, v)
		}
	}
	set("TERM", "xterm-256color")
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, errs.E(errs.Invalid, "invalid environment variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, errs.E(errs.Invalid, "environment variable %s contains a NUL byte", k)
		}
		set(k, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

func validSize(sz Size) error {
	if sz.Rows <= 0 || sz.Cols <= 0 || sz.Rows > 0xffff || sz.Cols > 0xffff {
		return errs.E(errs.Invalid, "size must have rows and cols between 1 and 65535, got %dx%d", sz.Rows, sz.Cols)
	}
	return nil
}

// defaultShell is what runs when the request names no command (OpenCode's clients send none): the
// user's $SHELL when the system lists it, otherwise the first acceptable shell, otherwise /bin/sh.
func (m *Manager) defaultShell() string {
	shells := m.Shells()
	if env := os.Getenv("SHELL"); env != "" {
		for _, sh := range shells {
			if sh.Path == env && sh.Acceptable {
				return env
			}
		}
	}
	for _, sh := range shells {
		if sh.Acceptable {
			return sh.Path
		}
	}
	return "/bin/sh"
}

// run reads the terminal until the process is gone, then records the exit.
func (s *session) run() {
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.pump()
	}()
	waitErr := s.cmd.Wait()
	code := exitCode(s.cmd.ProcessState, waitErr)
	// Whatever the shell left behind in its session would keep the terminal open (and keep running
	// with no one to see it): the PTY's lifetime bounds its processes.
	process.KillSession(s.pid)
	select {
	case <-readDone:
	case <-time.After(drainGrace):
		s.m.log.Warn("pty output still open after exit; closing it", "id", s.id)
	}
	_ = s.tty.Close()
	<-readDone

	s.mu.Lock()
	s.exited = true
	s.info.Status = Exited
	s.info.ExitCode = &code
	s.endViewersLocked(ErrExited)
	s.mu.Unlock()
	s.m.publish(s.directory, api.EventPtyExited, api.PtyExited{ID: s.id, ExitCode: code})
	s.m.log.Info("pty exited", "id", s.id, "exitCode", code)
	close(s.done)
}

// pump copies output into the scrollback and to every viewer. It never waits for a viewer: one
// whose queue is full is dropped.
func (s *session) pump() {
	var dec textDecoder
	buf := make([]byte, readChunk)
	for {
		n, err := s.readBatch(buf)
		if n > 0 {
			s.emit(dec.decode(buf[:n]))
		}
		if err != nil {
			// EIO is how Linux reports that the other side of the terminal is closed.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				s.m.log.Warn("pty read failed", "id", s.id, "err", err)
			}
			s.emit(dec.flush())
			return
		}
	}
}

func (s *session) emit(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.write(chunk)
	for v := range s.viewers {
		select {
		case v.ch <- chunk:
		default:
			s.dropLocked(v, ErrSlow)
		}
	}
}

func exitCode(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	return 1
}

func (s *session) snapshot() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *session) infoLocked() Info {
	info := s.info
	info.Args = slices.Clone(s.info.Args)
	if s.info.ExitCode != nil {
		c := *s.info.ExitCode
		info.ExitCode = &c
	}
	return info
}

func (m *Manager) lookup(ptyID string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ptys[ptyID]
	if !ok {
		return nil, notFound(ptyID)
	}
	return s, nil
}

func notFound(ptyID string) error {
	return errs.Named(errs.NotFound, "PtyNotFoundError", "PTY session not found: %s", ptyID).With("ptyID", ptyID)
}

// List returns every PTY, running or exited (until removed), oldest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	all := make([]*session, 0, len(m.ptys))
	for _, s := range m.ptys {
		all = append(all, s)
	}
	m.mu.Unlock()
	infos := make([]Info, 0, len(all))
	for _, s := range all {
		infos = append(infos, s.snapshot())
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return infos
}

// Get returns one PTY.
func (m *Manager) Get(ptyID string) (Info, error) {
	s, err := m.lookup(ptyID)
	if err != nil {
		return Info{}, err
	}
	return s.snapshot(), nil
}

// Update renames or resizes a PTY and publishes pty.updated. Resizing sets the terminal's real
// window size (TIOCSWINSZ), so the program sees SIGWINCH and `stty size` reports it; resizing a PTY
// whose process has exited changes nothing and is not an error (a client may resize as it exits).
func (m *Manager) Update(ptyID string, in UpdateInput) (Info, error) {
	if in.Size != nil {
		if err := validSize(*in.Size); err != nil {
			return Info{}, err
		}
	}
	s, err := m.lookup(ptyID)
	if err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	if in.Size != nil && !s.exited {
		if err := s.setSize(*in.Size); err != nil {
			s.mu.Unlock()
			return Info{}, &errs.Error{Kind: errs.Internal, Message: "cannot resize the terminal", Err: err}
		}
		s.size = *in.Size
		s.tellSizeLocked()
	}
	if in.Title != nil {
		s.info.Title = *in.Title
	}
	info := s.infoLocked()
	s.mu.Unlock()
	m.publish(s.directory, api.EventPtyUpdated, api.PtyChanged{Info: info})
	return info, nil
}

// Write sends input to the PTY as if typed. It blocks while the terminal's input queue is full (a
// large paste into a program that reads slowly) until ctx ends.
func (m *Manager) Write(ctx context.Context, ptyID string, input []byte) error {
	s, err := m.lookup(ptyID)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if exited {
		return errs.E(errs.Conflict, "PTY session has exited: %s", ptyID)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.tty.SetWriteDeadline(time.Now()) })
	_, err = s.tty.Write(input)
	if !stop() {
		// ctx ended: the deadline may be set, and must not fail the next writer.
		_ = s.tty.SetWriteDeadline(time.Time{})
		if err != nil {
			return ctx.Err()
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EIO) {
			return errs.E(errs.Conflict, "PTY session has exited: %s", ptyID)
		}
		return &errs.Error{Kind: errs.Internal, Message: "cannot write to the terminal", Err: err}
	}
	return nil
}

// Remove kills the PTY's processes, waits for them to be reaped, and forgets it: pty.exited (if it
// was still running) then pty.deleted are published.
func (m *Manager) Remove(ptyID string) error {
	m.mu.Lock()
	s, ok := m.ptys[ptyID]
	if ok {
		delete(m.ptys, ptyID)
	}
	m.mu.Unlock()
	if !ok {
		return notFound(ptyID)
	}
	process.KillSession(s.pid)
	<-s.done
	m.publish(s.directory, api.EventPtyDeleted, api.PtyDeleted{ID: ptyID})
	m.log.Info("pty removed", "id", ptyID)
	return nil
}

// Close kills every PTY and waits until each process is reaped; viewers end with ErrShutdown.
// Used at server shutdown; afterwards Create fails.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*session, 0, len(m.ptys))
	for _, s := range m.ptys {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		s.mu.Lock()
		s.endViewersLocked(ErrShutdown)
		s.mu.Unlock()
		process.KillSession(s.pid)
	}
	for _, s := range all {
		<-s.done
	}
}

func (m *Manager) publish(directory, typ string, props any) {
	m.opts.Bus.Emit(m.log, directory, typ, props)
}

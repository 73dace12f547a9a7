package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/tandem-dev/tandem/client"
	"github.com/tandem-dev/tandem/internal/base/id"
)

// Options wire a connection to a tandem server.
type Options struct {
	Client  *client.Client // the tandem server (in-process or attached)
	Version string
	Logger  *slog.Logger
	// Dir is the project directory of a thread started without a cwd (absolute).
	Dir string
	// Home is reported to the client as codexHome: tandem's data directory.
	Home string
	// Trace, when set, receives every message of the connection, each as one JSON line
	// {"dir":"<<"|">>","msg":…} ("<<" is what tandem sent).
	Trace io.Writer
}

// server is one connection's state.
type server struct {
	o   Options
	c   *client.Client
	p   *peer
	log *slog.Logger
	ids *id.Source

	mu          sync.Mutex
	initialized bool
	client      string             // clientInfo.name
	threads     map[string]*thread // by thread ID
	known       map[string]string  // thread ID -> session ID
	traceMu     sync.Mutex

	ctx context.Context
	wg  sync.WaitGroup // the threads' event readers

	// then is set by a handler for what follows its response (the read loop runs one request at a
	// time, so only it touches the field).
	then func(context.Context)
}

// Serve speaks the app-server protocol on conn until the client goes away or ctx ends. Every
// thread's event reader stops before it returns.
func Serve(ctx context.Context, o Options, conn Conn) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		o.Dir = wd
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &server{o: o, c: o.Client, log: o.Logger, ids: id.NewSource(), threads: map[string]*thread{}, known: map[string]string{}, ctx: ctx}
	s.p = newPeer(ctx, conn, func(b []byte) { s.trace("<<", b) })
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	for {
		raw, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		s.trace(">>", raw)
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			_ = s.p.respond(ctx, json.RawMessage("null"), nil, &rpcError{Code: -32700, Message: "parse error: " + err.Error()})
			continue
		}
		switch {
		case m.Method == "" && len(m.ID) > 0:
			if !s.p.answered(m) {
				s.log.Debug("app-server: a response to no outstanding request", "id", string(m.ID))
			}
		case m.Method != "" && len(m.ID) == 0:
			s.notification(m)
		case m.Method != "":
			result, err := s.call(ctx, m)
			if werr := s.p.respond(ctx, m.ID, result, err); werr != nil {
				return nil // the client is gone
			}
			s.after(ctx)
		default:
			_ = s.p.respond(ctx, json.RawMessage("null"), nil, invalidRequest("a message needs a method, or an id with a result or an error"))
		}
	}
}

func (s *server) trace(dir string, b []byte) {
	if s.o.Trace == nil {
		return
	}
	line, err := json.Marshal(struct {
		Dir string          `json:"dir"`
		Msg json.RawMessage `json:"msg"`
	}{dir, b})
	if err != nil {
		return
	}
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	_, _ = s.o.Trace.Write(append(line, '\n'))
}

func (s *server) notification(m message) {
	switch m.Method {
	case "initialized":
	default:
		s.log.Debug("app-server: notification ignored", "method", m.Method)
	}
}

// handler answers one request.
type handler func(s *server, ctx context.Context, params json.RawMessage) (any, error)

// methods are the requests tandem serves; any other gets -32601 with the method's name.
var methods = map[string]handler{
	"account/read":                              (*server).accountRead,
	"account/rateLimits/read":                   (*server).rateLimits,
	"account/bedrock/checkGovCloudRequirements": (*server).govCloud,
	"config/read":                               (*server).configRead,
	"configRequirements/read":                   (*server).configRequirements,
	"model/list":                                (*server).modelList,
	"hooks/list":                                (*server).hooksList,
	"skills/list":                               (*server).skillsList,
	"plugin/installed":                          (*server).pluginInstalled,
	"collaborationMode/list":                    (*server).collaborationModes,
	"mcpServerStatus/list":                      (*server).mcpStatus,
	"thread/start":                              (*server).threadStart,
	"thread/resume":                             (*server).threadResume,
	"thread/list":                               (*server).threadList,
	"thread/loaded/list":                        (*server).threadLoaded,
	"thread/read":                               (*server).threadRead,
	"thread/turns/list":                         (*server).threadTurns,
	"thread/name/set":                           (*server).threadName,
	"thread/archive":                            (*server).threadArchive,
	"thread/unsubscribe":                        (*server).threadUnsubscribe,
	"turn/start":                                (*server).turnStart,
	"turn/steer":                                (*server).turnSteer,
	"turn/interrupt":                            (*server).turnInterrupt,
}

func (s *server) call(ctx context.Context, m message) (any, error) {
	if m.Method == "initialize" {
		return s.initialize(m.Params)
	}
	s.mu.Lock()
	ready := s.initialized
	s.mu.Unlock()
	if !ready {
		return nil, invalidRequest("Not initialized")
	}
	h, ok := methods[m.Method]
	if !ok {
		return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("tandem does not serve %s", m.Method)}
	}
	params := m.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	res, err := h(s, ctx, params)
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) {
			return nil, invalidRequest("%s", ce.Error())
		}
	}
	return res, err
}

// after runs what follows a request's response: the notifications Codex sends once the client
// has its answer (thread/started after thread/start, the turn's stream after turn/start).
func (s *server) after(ctx context.Context) {
	next := s.then
	s.then = nil
	if next != nil {
		next(ctx)
	}
}

type initializeParams struct {
	ClientInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
	Capabilities *struct {
		ExperimentalAPI           bool     `json:"experimentalApi"`
		OptOutNotificationMethods []string `json:"optOutNotificationMethods"`
	} `json:"capabilities"`
}

func (s *server) initialize(raw json.RawMessage) (any, error) {
	var p initializeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("initialize: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initialized {
		return nil, invalidRequest("Already initialized")
	}
	s.initialized = true
	s.client = p.ClientInfo.Name
	if p.Capabilities != nil {
		s.p.mu.Lock()
		for _, m := range p.Capabilities.OptOutNotificationMethods {
			s.p.optOut[m] = true
		}
		s.p.mu.Unlock()
	}
	if s.client != "" {
		s.c = s.c.Named(s.client)
	}
	home := s.o.Home
	if home == "" {
		home = s.o.Dir
	}
	return map[string]any{
		"userAgent":      fmt.Sprintf("tandem/%s (%s; %s) %s/%s", s.o.Version, runtime.GOOS, runtime.GOARCH, p.ClientInfo.Name, p.ClientInfo.Version),
		"codexHome":      filepath.Clean(home),
		"platformFamily": platformFamily(),
		"platformOs":     runtime.GOOS,
	}, nil
}

func platformFamily() string {
	if runtime.GOOS == "windows" {
		return "windows"
	}
	return "unix"
}

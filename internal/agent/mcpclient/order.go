package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxSentSchemas bounds the schemas remembered between reading a request and handling it.
const maxSentSchemas = 64

// sentSchemas remembers the requestedSchema of each elicitation/create request as the server wrote
// it. The SDK hands the handler the schema decoded into maps, which loses the order of the
// properties, and that order is how the server lays out its form ("name" first, not eighth).
type sentSchemas struct {
	mu    sync.Mutex
	byKey map[string]json.RawMessage // the schema re-encoded with sorted keys → as sent
}

func newSentSchemas() *sentSchemas { return &sentSchemas{byKey: map[string]json.RawMessage{}} }

// note records the schema of one elicitation/create request's params.
func (s *sentSchemas) note(params json.RawMessage) {
	var p struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestedSchema) == 0 {
		return
	}
	var decoded any
	if json.Unmarshal(p.RequestedSchema, &decoded) != nil {
		return
	}
	key, err := json.Marshal(decoded)
	if err != nil {
		return
	}
	var sent bytes.Buffer
	if json.Compact(&sent, p.RequestedSchema) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byKey) >= maxSentSchemas {
		clear(s.byKey)
	}
	s.byKey[string(key)] = sent.Bytes()
}

// take returns, and forgets, the schema as sent that decodes to v; nil when none was seen.
func (s *sentSchemas) take(v any) json.RawMessage {
	key, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.byKey[string(key)]
	delete(s.byKey, string(key))
	return sent
}

// schemaTransport is a transport whose connection notes the schemas of the elicitations it reads.
// Only stdio transports are wrapped: the Streamable HTTP connection relies on an SDK-internal
// interface that a wrapper would hide, so its HTTP responses are read by an sseTap instead.
type schemaTransport struct {
	sdk.Transport
	schemas *sentSchemas
}

func (t schemaTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return schemaConn{Connection: c, schemas: t.schemas}, nil
}

type schemaConn struct {
	sdk.Connection
	schemas *sentSchemas
}

func (c schemaConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "elicitation/create" {
		c.schemas.note(r.Params)
	}
	return m, err
}

// maxTapLine is the longest event-stream line an sseTap looks into; longer ones pass unread.
const maxTapLine = 1 << 20

// sseTap reads a Streamable HTTP event stream as it passes to the SDK, and notes the schemas of the
// elicitation/create requests in its data lines. It changes nothing it reads.
type sseTap struct {
	io.ReadCloser
	schemas *sentSchemas
	line    []byte
	long    bool // the current line outgrew maxTapLine
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.scan(p[:n])
	return n, err
}

func (t *sseTap) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.add(b)
			return
		}
		t.add(b[:i])
		if !t.long {
			t.data(bytes.TrimSuffix(t.line, []byte("\r")))
		}
		t.line, t.long = t.line[:0], false
		b = b[i+1:]
	}
}

func (t *sseTap) add(b []byte) {
	if t.long || len(t.line)+len(b) > maxTapLine {
		t.line, t.long = t.line[:0], true
		return
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) data(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte("elicitation/create")) {
		return
	}
	var msg struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &msg) == nil && msg.Method == "elicitation/create" {
		t.schemas.note(msg.Params)
	}
}

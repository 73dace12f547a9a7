package server

import (
	"bufio"
	"compress/gzip"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/tandem-dev/tandem/internal/base/contentcoding"
)

// minCompress is the smallest JSON body worth compressing: below it gzip's header and the work
// cost more than the bytes saved.
const minCompress = 1024

// gzipPool keeps gzip writers across responses, since each holds about 256 KB of tables.
type gzipPool struct{ pool sync.Pool }

func (p *gzipPool) get() *gzip.Writer {
	if zw, ok := p.pool.Get().(*gzip.Writer); ok {
		return zw
	}
	return gzip.NewWriter(nil)
}

func (p *gzipPool) put(zw *gzip.Writer) {
	zw.Reset(nil)
	p.pool.Put(zw)
}

// compressJSON gzips JSON responses of at least minCompress bytes for clients whose
// Accept-Encoding takes gzip. Everything else passes as it is: event streams (they must reach the
// client event by event), WebSocket upgrades, bodies that already carry a Content-Encoding (the
// UI's precompressed files) and small bodies, which are sent with their exact length.
func compressJSON(next http.Handler) http.Handler {
	pool := &gzipPool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		accepts := contentcoding.Accepts(r.Header.Get("Accept-Encoding"), "gzip")
		cw := &compressWriter{ResponseWriter: w, pool: pool, accepts: accepts, status: http.StatusOK}
		defer cw.finish()
		next.ServeHTTP(cw, r)
	})
}

// compressWriter holds back the head and up to minCompress bytes of a JSON body until it knows
// whether the body is large enough to compress.
type compressWriter struct {
	http.ResponseWriter
	pool    *gzipPool
	accepts bool

	status   int
	decided  bool // the head has been written (or handed through)
	eligible bool // a JSON body not yet encoded; known once WriteHeader was called
	sawHead  bool
	buf      []byte
	zw       *gzip.Writer
	hijacked bool
}

func (c *compressWriter) WriteHeader(code int) {
	if c.sawHead || c.decided {
		if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
			c.ResponseWriter.WriteHeader(code) // informational heads pass through
		}
		return
	}
	if code >= 100 && code < 200 {
		c.ResponseWriter.WriteHeader(code)
		return
	}
	c.sawHead, c.status = true, code
	h := c.Header()
	c.eligible = code != http.StatusNoContent && code != http.StatusNotModified &&
		h.Get("Content-Encoding") == "" && isJSON(h.Get("Content-Type"))
	if c.eligible {
		// One line for both: net/http's work on a head grows with its lines (sorting, escaping,
		// writing each), and every JSON answer carries this one.
		if vary := h["Vary"]; len(vary) == 1 && vary[0] == "Origin" {
			vary[0] = "Origin, Accept-Encoding"
		} else {
			h.Add("Vary", "Accept-Encoding")
		}
	}
	if !c.eligible || !c.accepts {
		c.pass()
	}
}

// pass writes the head as the handler set it and hands every later write straight through.
func (c *compressWriter) pass() {
	c.decided = true
	c.ResponseWriter.WriteHeader(c.status)
}

func (c *compressWriter) Write(p []byte) (int, error) {
	if !c.sawHead {
		c.WriteHeader(http.StatusOK)
	}
	switch {
	case c.zw != nil:
		return c.zw.Write(p)
	case c.decided:
		return c.ResponseWriter.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= minCompress {
		if err := c.startGzip(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// startGzip sends the head with Content-Encoding: gzip and the body held back so far.
func (c *compressWriter) startGzip() error {
	h := c.Header()
	h.Set("Content-Encoding", "gzip")
	h.Del("Content-Length")
	if etag := h.Get("ETag"); etag != "" && etag[len(etag)-1] == '"' {
		h.Set("ETag", etag[:len(etag)-1]+`-gzip"`) // another representation, another tag
	}
	c.decided = true
	c.ResponseWriter.WriteHeader(c.status)
	c.zw = c.pool.get()
	c.zw.Reset(c.ResponseWriter)
	buf := c.buf
	c.buf = nil
	_, err := c.zw.Write(buf)
	return err
}

// flushHeld sends a held-back small body as it is, with its exact length.
func (c *compressWriter) flushHeld() {
	if c.decided {
		return
	}
	if !c.sawHead {
		c.status = http.StatusOK
	}
	c.Header().Set("Content-Length", strconv.Itoa(len(c.buf)))
	c.pass()
	if len(c.buf) > 0 {
		_, _ = c.ResponseWriter.Write(c.buf)
	}
	c.buf = nil
}

// Flush sends what is held back: a flush means the client should see it now, so a body that has
// not reached minCompress yet goes out uncompressed.
func (c *compressWriter) Flush() {
	switch {
	case c.zw != nil:
		_ = c.zw.Flush()
	case !c.decided && c.sawHead:
		c.Header().Del("Content-Length")
		c.pass()
		_, _ = c.ResponseWriter.Write(c.buf)
		c.buf = nil
	case !c.sawHead:
		c.WriteHeader(http.StatusOK)
		if !c.decided {
			c.pass()
		}
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// finish ends the gzip stream, or sends a body too small to compress.
func (c *compressWriter) finish() {
	if c.hijacked {
		return
	}
	if c.zw != nil {
		_ = c.zw.Close()
		c.pool.put(c.zw)
		c.zw = nil
		return
	}
	if !c.decided && c.sawHead {
		c.flushHeld()
	}
}

// Hijack hands the connection over (an SSE stream that writes its own head); nothing is held
// back then, since a handler hijacks before writing.
func (c *compressWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.ResponseWriter).Hijack()
	if err == nil {
		c.hijacked = true
	}
	return conn, rw, err
}

func (c *compressWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func isJSON(contentType string) bool {
	if contentType == "application/json" { // what the routes set: spared parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (len(mt) > 5 && mt[len(mt)-5:] == "+json")
}

package terminal

// ring is the scrollback: the newest len(buf) bytes of a PTY's output, addressed by absolute offset
// (the count of bytes produced before them) so that a viewer's cursor stays meaningful after the ring
// wraps.
type ring struct {
	buf   []byte
	total int64 // bytes ever written; the absolute offset of the next byte
}

func newRing(size int) ring { return ring{buf: make([]byte, size)} }

// start is the absolute offset of the oldest byte still held.
func (r *ring) start() int64 {
	if n := int64(len(r.buf)); r.total > n {
		return r.total - n
	}
	return 0
}

func (r *ring) write(p []byte) {
	n := len(r.buf)
	if n == 0 {
		r.total += int64(len(p))
		return
	}
	r.total += int64(len(p))
	if len(p) >= n {
		p = p[len(p)-n:]
	}
	at := int((r.total - int64(len(p))) % int64(n))
	k := copy(r.buf[at:], p)
	copy(r.buf, p[k:])
}

// since copies the bytes from absolute offset from (clamped to what the ring holds) to the end.
func (r *ring) since(from int64) []byte {
	from = max(from, r.start())
	if from >= r.total {
		return nil
	}
	out := make([]byte, r.total-from)
	n := int64(len(r.buf))
	at := int(from % n)
	k := copy(out, r.buf[at:])
	copy(out[k:], r.buf)
	return out
}

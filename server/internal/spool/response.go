package spool

import (
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Response buffering, as nginx's fastcgi_buffering and proxy_buffering:
// the FastCGI and proxy handlers read a response from php-fpm or the
// upstream as fast as it comes and hand it to a Response, which passes it
// on to the client as fast as the client takes it. So a client that reads
// slowly, or not at all (an HTTP/2 stream at a zero window), holds neither
// a php-fpm worker nor an upstream connection: those are released as soon
// as the backend has finished, while the client is still being served
// from the buffer. What the client has not taken is held in memory up to
// ResponseMem bytes, beyond that in an unlinked temporary file up to
// ResponseFileMax bytes and within the spool's Budget (the same as the
// request bodies', in all and per client; responses at most its
// ResponseShare); past them, Write waits for the client (the backend is
// then held, as without buffering). All responses together
// hold at most ResponseMemTotal bytes in memory (so many stalled clients
// cost disk, not the board's memory): past it, bytes go to the file
// sooner.
const (
	ResponseMem      = 64 << 10
	ResponseMemTotal = 16 << 20
	ResponseFileMax  = 1 << 30  // as nginx's fastcgi_max_temp_file_size
	chunkSize        = 32 << 10 // one read of the proxy, one write of the FastCGI handler
)

var (
	memInUse atomic.Int64              // the memory all Responses hold, in bytes
	memTotal = int64(ResponseMemTotal) // its bound (tests lower it)
)

var (
	chunks    = sync.Pool{New: func() any { return new([chunkSize]byte) }}
	responses = sync.Pool{New: func() any { b := &Response{}; b.cond.L = &b.mu; return b }}
)

// Response is the buffer between a backend and one client. Write never
// waits for the client while within the bounds; the bytes reach the client
// from a goroutine of the Response's own, started by the first Flush or
// when memory is full, and flushed whenever it has caught up. Until then
// nothing is written, so a short response is written whole by Finish, in
// the caller's goroutine, after the backend is released. The zero value is
// not usable: see NewResponse.
type Response struct {
	w   io.Writer
	dir string
	mem int   // bound of the memory held
	max int64 // bound of the file's unsent bytes
	bud *Budget
	rem string // the client's address, for bud
	l   lease  // the file's part of bud

	mu      sync.Mutex
	cond    sync.Cond
	chunks  []*[chunkSize]byte
	head    int // sent bytes of chunks[0]
	tail    int // used bytes of the last chunk
	memN    int // unsent bytes in memory
	file    *os.File
	fw, fr  int64 // the file's write and read offsets
	noFile  bool  // the file could not be made: wait for the client
	running bool
	closed  bool
	err     error // the client's write error, once there is one
	drained bool  // the drain has returned
	spilled bool
	status  int // held status (HoldStatus), 0 once sent
}

// NewResponse returns a Response writing to w, with its file in dir (""
// for os.TempDir()). The file counts against bud (nil: only
// ResponseFileMax bounds it) as a response to the client at remoteAddr
// (an http.Request's RemoteAddr, "ip:port"): one file and its size;
// where it would pass the budget, the file takes no more bytes and Write
// waits for the client instead. When w is an http.ResponseWriter, what
// was written is flushed whenever the client has caught up. After Finish
// the Response is reused: the caller drops it.
func NewResponse(w io.Writer, dir string, bud *Budget, remoteAddr string) *Response {
	b := responses.Get().(*Response)
	b.w, b.dir, b.mem, b.max = w, dir, ResponseMem, ResponseFileMax
	b.bud, b.rem = bud, remoteAddr
	return b
}

// HoldStatus makes the Response send status with WriteHeader (its writer
// must be an http.ResponseWriter) before the first bytes it passes on, a
// flush, or at Finish: until then the caller may still Discard the
// response and answer otherwise. Call it before any Write.
func (b *Response) HoldStatus(status int) { b.status = status }

// sendStatus sends the held status, if any; only the goroutine that
// drains calls it (or Finish once the drain has returned).
func (b *Response) sendStatus() {
	if s := b.status; s != 0 {
		b.status = 0
		b.w.(http.ResponseWriter).WriteHeader(s)
	}
}

func (b *Response) flush() {
	b.sendStatus()
	switch w := b.w.(type) {
	case http.Flusher:
		w.Flush()
	case http.ResponseWriter:
		http.NewResponseController(w).Flush()
	}
}

// SetBounds sets the memory and file bounds (tests use small ones).
func (b *Response) SetBounds(mem int, file int64) { b.mem, b.max = mem, file }

// Spilled reports whether the response went to the temporary file.
func (b *Response) Spilled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spilled
}

// Write takes p for the client. Its error is the client's (a write to the
// client failed: the rest of the response is dropped) or nil.
func (b *Response) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(p) > 0 {
		if b.err != nil {
			return 0, b.err
		}
		switch {
		case b.fw == b.fr && b.memN < b.mem && b.memRoom():
			k := b.toMem(p[:min(len(p), b.mem-b.memN)])
			p = p[k:]
		case !b.noFile && b.fw-b.fr < b.max && (b.running || b.fw > b.fr):
			k := min(int64(len(p)), b.max-(b.fw-b.fr))
			if err := b.toFile(p[:k]); err != nil {
				b.noFile = true // the disk failed or the budget is spent: wait for the client instead
				continue
			}
			p = p[k:]
		case !b.running:
			b.start() // memory is full: spill to the file from now on
			continue
		default:
			b.cond.Wait()
			continue
		}
		b.cond.Broadcast()
	}
	return n, nil
}

// memRoom reports (b.mu held) whether memory can take more bytes: the
// last chunk has room, or all Responses together may hold another (or
// the file failed: then memory, within the Response's own bound, is all
// there is).
func (b *Response) memRoom() bool {
	return len(b.chunks) > 0 && b.tail < chunkSize || memInUse.Load()+chunkSize <= memTotal || b.noFile
}

// toMem appends p to the memory chunks (b.mu held) and returns how much
// it took.
func (b *Response) toMem(p []byte) int {
	n := 0
	for len(p) > 0 {
		if len(b.chunks) == 0 || b.tail == chunkSize {
			if !b.memRoom() {
				break
			}
			memInUse.Add(chunkSize)
			b.chunks = append(b.chunks, chunks.Get().(*[chunkSize]byte))
			b.tail = 0
		}
		k := copy(b.chunks[len(b.chunks)-1][b.tail:], p)
		b.tail += k
		b.memN += k
		n += k
		p = p[k:]
	}
	return n
}

// toFile appends p to the file (b.mu held), making it first. Past the
// budget it returns ErrBusy.
func (b *Response) toFile(p []byte) error {
	if b.file == nil {
		if b.bud != nil {
			b.l = lease{b: b.bud, client: b.bud.clientOf(b.rem), resp: true}
			b.bud.checkDisk(b.dir)
			if !b.bud.take(b.l.client, 1, 0, true) {
				return ErrBusy
			}
			b.l.files = 1
		}
		f, err := os.CreateTemp(b.dir, "arka-response-*")
		if err != nil {
			b.l.release()
			return err
		}
		os.Remove(f.Name()) // unlinked: the file goes away with the descriptor
		b.file = f
		b.spilled = true
	}
	// The file's size, not its unsent bytes, is what the disk holds.
	if more := b.fw + int64(len(p)) - b.l.bytes; b.bud != nil && more > 0 && !b.l.grow(more) {
		return ErrBusy
	}
	if _, err := b.file.WriteAt(p, b.fw); err != nil {
		return err
	}
	b.fw += int64(len(p))
	return nil
}

// Flush asks for what was written to reach the client now (the backend
// paused: a flushing script, server-sent events): from here on the
// Response passes bytes on from its own goroutine.
func (b *Response) Flush() {
	b.mu.Lock()
	if !b.running {
		b.start()
	}
	b.mu.Unlock()
}

func (b *Response) start() {
	b.running = true
	go b.drain()
}

// Finish ends the response: it waits until the client has everything
// (writing it itself when nothing was passed on yet) and frees the
// buffers. It returns the client's write error, if any. The caller may
// use the client's writer again only after Finish.
func (b *Response) Finish() error {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	running := b.running
	b.running = true
	b.mu.Unlock()
	if !running {
		b.drain()
	}
	b.mu.Lock()
	for !b.drained {
		b.cond.Wait()
	}
	b.sendStatus() // nothing was passed on: an empty body
	b.drop()
	if b.file != nil {
		b.file.Close()
	}
	b.l.release()
	err := b.err
	b.mu.Unlock()
	chunks := b.chunks[:0]
	*b = Response{chunks: chunks, cond: sync.Cond{L: &b.mu}}
	responses.Put(b)
	return err
}

// Discard ends the response without passing on what was written, when
// nothing was passed on yet (no Flush, memory never full): then it frees
// the buffers as Finish does and reports true. Otherwise it does nothing
// and reports false: the caller finishes or abandons the response as
// usual. A backend that fails before the client got anything can so be
// answered with an error instead.
func (b *Response) Discard() bool {
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return false
	}
	b.drop()
	b.fr, b.fw = 0, 0
	b.status = 0
	b.mu.Unlock()
	b.Finish()
	return true
}

// drop returns the memory chunks (b.mu held).
func (b *Response) drop() {
	for i, c := range b.chunks {
		chunks.Put(c)
		memInUse.Add(-chunkSize)
		b.chunks[i] = nil
	}
	b.chunks, b.head, b.tail, b.memN = b.chunks[:0], 0, 0, 0
}

// drain passes the bytes on to the client until the Response is finished
// and empty, or the client fails.
func (b *Response) drain() {
	var rbuf *[chunkSize]byte
	b.mu.Lock()
	defer func() {
		b.drained = true
		b.cond.Broadcast()
		b.mu.Unlock()
		if rbuf != nil {
			chunks.Put(rbuf)
		}
	}()
	for {
		for b.memN == 0 && b.fw == b.fr && !b.closed {
			b.cond.Wait()
		}
		var p []byte
		fromMem := b.memN > 0
		switch {
		case fromMem:
			end := chunkSize
			if len(b.chunks) == 1 {
				end = b.tail
			}
			p = b.chunks[0][b.head:end]
		case b.fw > b.fr:
			if rbuf == nil {
				rbuf = chunks.Get().(*[chunkSize]byte)
			}
			k, err := b.file.ReadAt(rbuf[:min(int64(chunkSize), b.fw-b.fr)], b.fr)
			if k == 0 {
				b.fail(err)
				return
			}
			p = rbuf[:k]
		default:
			return // closed and empty
		}
		b.mu.Unlock()
		b.sendStatus()
		_, err := b.w.Write(p)
		b.mu.Lock()
		if err != nil {
			b.fail(err)
			return
		}
		if fromMem {
			b.head += len(p)
			b.memN -= len(p)
			if b.head == chunkSize || len(b.chunks) == 1 && b.head == b.tail {
				chunks.Put(b.chunks[0])
				memInUse.Add(-chunkSize)
				n := copy(b.chunks, b.chunks[1:])
				b.chunks[n] = nil
				b.chunks = b.chunks[:n]
				b.head = 0
				if n == 0 {
					b.tail = 0
				}
			}
		} else {
			b.fr += int64(len(p))
			if b.fr == b.fw {
				b.fr, b.fw = 0, 0 // all sent: the file is used again from its start
			}
		}
		b.cond.Broadcast()
		if b.memN == 0 && b.fw == b.fr && !b.closed {
			b.mu.Unlock()
			b.flush()
			b.mu.Lock()
		}
	}
}

// fail records the client's error and drops what it will never get (b.mu
// held).
func (b *Response) fail(err error) {
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	b.err = err
	b.drop()
	b.fr, b.fw = 0, 0
	b.cond.Broadcast()
}

// Buffering is whether a response is buffered: the route's
// response_buffering, unless the backend's X-Accel-Buffering field ("yes"
// or "no", as nginx reads it) says otherwise for this response. The field
// is removed from h: it is for Arka, not the client.
func Buffering(route bool, h http.Header) bool {
	v, ok := h["X-Accel-Buffering"]
	if !ok {
		return route
	}
	delete(h, "X-Accel-Buffering")
	switch {
	case len(v) == 1 && strings.EqualFold(v[0], "no"):
		return false
	case len(v) == 1 && strings.EqualFold(v[0], "yes"):
		return true
	}
	return route
}

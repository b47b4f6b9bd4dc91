package server_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Raw is a raw-frame HTTP/2 client connection for the hostile tests.
type h2Raw struct {
	tc  *tls.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

// dialH2Raw opens a TLS connection negotiating "h2", sends the preface and
// SETTINGS with the given initial stream window.
func dialH2Raw(t *testing.T, addr string, window uint32) *h2Raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	tc.SetDeadline(time.Now().Add(20 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.Write([]byte(http2.ClientPreface))
	h := &h2Raw{tc: tc, fr: http2.NewFramer(tc, tc)}
	h.fr.MaxHeaderListSize = 1 << 20
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hb)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	return h
}

// get sends a GET of path on stream id with extra fields.
func (h *h2Raw) get(id uint32, host, path string, extra ...hpack.HeaderField) {
	h.hb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", host}, {":path", path}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for _, f := range extra {
		h.enc.WriteField(f)
	}
	block := h.hb.Bytes()
	first := true
	for len(block) > 0 || first {
		n := min(len(block), 16<<10)
		frag := block[:n]
		block = block[n:]
		if first {
			h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndHeaders: len(block) == 0, EndStream: true})
			first = false
		} else {
			h.fr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
}

// openFilesNamed counts this process's descriptors open on a file whose
// path ends in name.
func openFilesNamed(t *testing.T, name string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasSuffix(p, name) {
			n++
		}
	}
	return n
}

// pattern is n bytes whose value depends on their offset (a stream sent
// from the wrong place of the file shows).
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// TestH2StalledFilesGiveBackDescriptors (QA H1): HTTP/2 streams waiting
// for flow-control window do not each hold their file open: a client
// with several connections of 16 stalled downloads of a large file holds
// at most one descriptor of it per connection, the next client is served
// quickly, and when window comes every stream gets the whole file, byte
// for byte.
func TestH2StalledFilesGiveBackDescriptors(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "ok")
	const size = 1 << 20
	content := pattern(size)
	if err := os.WriteFile(filepath.Join(root, "stall.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, siteFor(`"a.example"`, root, true))
	const conns, streams = 4, 16
	var cs []*h2Raw
	for range conns {
		h := dialH2Raw(t, e.HTTPS, 0)
		for i := range streams {
			h.get(uint32(2*i+1), "a.example", "/stall.bin")
		}
		cs = append(cs, h)
	}
	// Every stream's response head comes (the file is open and a read is
	// waiting for window).
	heads := 0
	for _, h := range cs {
		for got := 0; got < streams; {
			f, err := h.fr.ReadFrame()
			if err != nil {
				t.Fatalf("after %d heads: %v", heads, err)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				if s := f.PseudoValue("status"); s != "200" {
					t.Fatalf("stream %d: status %s", f.StreamID, s)
				}
				got++
				heads++
			case *http2.RSTStreamFrame:
				t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
			case *http2.SettingsFrame:
				if !f.IsAck() {
					h.fr.WriteSettingsAck()
				}
			}
		}
	}
	// The handlers reach their wait for window.
	var held int
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		held = openFilesNamed(t, "stall.bin")
	}
	if held > conns {
		t.Errorf("%d descriptors of stall.bin held by %d connections of %d stalled streams; want at most one per connection", held, conns, streams)
	}
	start := time.Now()
	if resp, body := e.Clients()[2].Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("next client: %d %q", resp.StatusCode, body)
	} else if d := time.Since(start); d > 2*time.Second {
		t.Errorf("next client served after %v", d)
	}
	// Window for everything: each stream gets the whole file.
	for ci, h := range cs {
		h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		h.fr.WriteWindowUpdate(0, 1<<31-1-65535)
		bodies := map[uint32]*bytes.Buffer{}
		for done := 0; done < streams; {
			f, err := h.fr.ReadFrame()
			if err != nil {
				t.Fatalf("connection %d: %v (%d streams complete)", ci, err, done)
			}
			switch f := f.(type) {
			case *http2.DataFrame:
				b := bodies[f.StreamID]
				if b == nil {
					b = &bytes.Buffer{}
					bodies[f.StreamID] = b
				}
				b.Write(f.Data())
				if f.StreamEnded() {
					done++
					if !bytes.Equal(b.Bytes(), content) {
						t.Errorf("connection %d stream %d: %d bytes, not the file's %d (or different)", ci, f.StreamID, b.Len(), size)
					}
				}
			case *http2.RSTStreamFrame:
				t.Fatalf("connection %d stream %d reset: %v", ci, f.StreamID, f.ErrCode)
			case *http2.GoAwayFrame:
				t.Fatalf("connection %d: GOAWAY %v", ci, f.ErrCode)
			case *http2.SettingsFrame:
				if !f.IsAck() {
					h.fr.WriteSettingsAck()
				}
			}
		}
	}
	n := openFilesNamed(t, "stall.bin")
	for deadline := time.Now().Add(2 * time.Second); n != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n = openFilesNamed(t, "stall.bin")
	}
	if n != 0 {
		t.Errorf("%d descriptors of stall.bin left after the downloads", n)
	}
}

// TestH2StalledFileReplaced: a stream that gave its file back while it
// waited for window is reset (RST_STREAM INTERNAL_ERROR) when the file
// was replaced meanwhile, rather than send another file's bytes under
// the length and ETag it announced; the connection's one waiting stream
// that kept its file open sends the old file whole.
func TestH2StalledFileReplaced(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "ok")
	const size = 1 << 20
	content := pattern(size)
	name := filepath.Join(root, "swap.bin")
	if err := os.WriteFile(name, content, 0o644); err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, siteFor(`"a.example"`, root, true))
	h := dialH2Raw(t, e.HTTPS, 0)
	h.get(1, "a.example", "/swap.bin")
	h.get(3, "a.example", "/swap.bin")
	for heads := 0; heads < 2; {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			heads++
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		}
	}
	for deadline := time.Now().Add(2 * time.Second); openFilesNamed(t, "swap.bin") != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors of swap.bin held by two stalled streams, want 1", openFilesNamed(t, "swap.bin"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Replaced (a new inode under the name), as a deploy does.
	tmp := name + ".new"
	if err := os.WriteFile(tmp, bytes.Repeat([]byte("n"), size), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	h.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	bodies := map[uint32]*bytes.Buffer{1: {}, 3: {}}
	complete, reset := 0, 0
	for complete+reset < 2 {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("%v (%d complete, %d reset)", err, complete, reset)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			b := bodies[f.StreamID]
			b.Write(f.Data())
			if f.StreamEnded() {
				complete++
				if !bytes.Equal(b.Bytes(), content) {
					t.Errorf("stream %d: %d bytes, not the old file whole", f.StreamID, b.Len())
				}
			}
		case *http2.RSTStreamFrame:
			reset++
			if f.ErrCode != http2.ErrCodeInternal {
				t.Errorf("stream %d reset with %v, want INTERNAL_ERROR", f.StreamID, f.ErrCode)
			}
			if b := bodies[f.StreamID]; !bytes.HasPrefix(content, b.Bytes()) {
				t.Errorf("stream %d sent bytes that are not the old file's", f.StreamID)
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		}
	}
	if complete != 1 || reset != 1 {
		t.Errorf("%d streams complete and %d reset, want 1 and 1", complete, reset)
	}
}

// TestH2HeaderBytesBounded (QA H2): the request heads an HTTP/2
// connection holds for streams in flight are bounded by the memory the
// connection limit assumes per connection: a client sending 128 streams
// of 28 KB heads on each of its connections to a slow proxy route gets
// most of them refused (REFUSED_STREAM, which clients retry, RFC 9113
// section 8.7), the heap does not grow by megabytes per connection, and
// the next client is served quickly.
func TestH2HeaderBytesBounded(t *testing.T) {
	var arrived atomic.Int64
	released := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-r.Context().Done():
		case <-released:
		}
	}))
	t.Cleanup(up.Close)
	defer close(released)
	dir := t.TempDir()
	root := www(t, dir, "a", "ok")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/slow/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
`)
	const conns, streams = 4, 128
	fat := make([]hpack.HeaderField, 4)
	for i := range fat {
		fat[i] = hpack.HeaderField{Name: fmt.Sprintf("x-fat-%d", i), Value: strings.Repeat(string(rune('a'+i)), 7000), Sensitive: true}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var cs []*h2Raw
	for range conns {
		h := dialH2Raw(t, e.HTTPS, 65535)
		for i := range streams {
			h.get(uint32(2*i+1), "a.example", fmt.Sprintf("/slow/%d", i), fat...)
		}
		cs = append(cs, h)
	}
	// Each stream is either refused or reaches the upstream.
	var refused atomic.Int64
	for _, h := range cs {
		go func() {
			for {
				f, err := h.fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.RSTStreamFrame:
					if f.ErrCode == http2.ErrCodeRefusedStream {
						refused.Add(1)
					}
				case *http2.SettingsFrame:
					if !f.IsAck() {
						h.fr.WriteSettingsAck()
					}
				}
			}
		}()
	}
	for deadline := time.Now().Add(15 * time.Second); arrived.Load()+refused.Load() < conns*streams; {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams reached the upstream and %d were refused, of %d", arrived.Load(), refused.Load(), conns*streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the admitted streams' upstream requests settle
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d streams admitted, %d refused; heap %+d KiB", arrived.Load(), refused.Load(), grown>>10)
	if n := arrived.Load(); n > conns*4 {
		t.Errorf("%d streams with 28 KB heads in flight on %d connections; want a few per connection", n, conns)
	}
	if grown > 8<<20 {
		t.Errorf("heap grew by %d KiB with %d connections", grown>>10, conns)
	}
	start := time.Now()
	if resp, body := e.Clients()[2].Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("next client: %d %q", resp.StatusCode, body)
	} else if d := time.Since(start); d > 2*time.Second {
		t.Errorf("next client served after %v", d)
	}
	for _, h := range cs {
		h.tc.Close()
	}
}

// TestH2StalledMultipart: a multipart/byteranges response whose stream
// gave its file back while it waited for window opens the file again for
// its next part and sends every part whole.
func TestH2StalledMultipart(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "ok")
	const size = 1 << 20
	content := pattern(size)
	if err := os.WriteFile(filepath.Join(root, "parts.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, siteFor(`"a.example"`, root, true))
	h := dialH2Raw(t, e.HTTPS, 0)
	rng := hpack.HeaderField{Name: "range", Value: "bytes=0-99999,500000-599999"}
	const streams = 3
	for i := range streams {
		h.get(uint32(2*i+1), "a.example", "/parts.bin", rng)
	}
	ctypes := map[uint32]string{}
	for len(ctypes) < streams {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "206" {
				t.Fatalf("stream %d: status %s", f.StreamID, s)
			}
			for _, hf := range f.RegularFields() {
				if hf.Name == "content-type" {
					ctypes[f.StreamID] = hf.Value
				}
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		}
	}
	for deadline := time.Now().Add(2 * time.Second); openFilesNamed(t, "parts.bin") > 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors of parts.bin held by %d stalled streams, want 1", openFilesNamed(t, "parts.bin"), streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	h.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	bodies := map[uint32]*bytes.Buffer{}
	for done := 0; done < streams; {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("%v (%d streams complete)", err, done)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			b := bodies[f.StreamID]
			if b == nil {
				b = &bytes.Buffer{}
				bodies[f.StreamID] = b
			}
			b.Write(f.Data())
			if f.StreamEnded() {
				done++
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		}
	}
	for id, b := range bodies {
		_, params, err := mime.ParseMediaType(ctypes[id])
		if err != nil {
			t.Fatalf("stream %d: %v", id, err)
		}
		mr := multipart.NewReader(b, params["boundary"])
		for i, want := range [][]byte{content[0:100000], content[500000:600000]} {
			p, err := mr.NextPart()
			if err != nil {
				t.Fatalf("stream %d part %d: %v", id, i, err)
			}
			got, _ := io.ReadAll(p)
			if !bytes.Equal(got, want) {
				t.Errorf("stream %d part %d: %d bytes, not the range's %d (or different)", id, i, len(got), len(want))
			}
		}
	}
}

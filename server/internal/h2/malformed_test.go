package h2_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawConn opens a TLS connection speaking h2 with a bare framer: preface
// and SETTINGS sent, header blocks decoded when read. Closed at cleanup.
func rawConn(t *testing.T, addr string) (*tls.Conn, *http2.Framer) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	return c, fr
}

// writeHeaders sends fields, in this order, as one header block on stream
// id: a HEADERS frame and CONTINUATION frames of at most 16 KiB.
func writeHeaders(fr *http2.Framer, id uint32, end bool, fields ...[2]string) {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range fields {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := b.Bytes()
	const max = 16 << 10
	first := block[:min(len(block), max)]
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(first) == len(block), EndStream: end})
	for rest := block[len(first):]; len(rest) > 0; {
		n := min(len(rest), max)
		fr.WriteContinuation(id, n == len(rest), rest[:n])
		rest = rest[n:]
	}
}

// rawRequest sends one HEADERS frame (END_STREAM) with fields in this order
// on a new connection and returns the response's :status and body, or the
// code of the RST_STREAM or GOAWAY the server answered with.
func rawRequest(t *testing.T, addr string, fields [][2]string) (status, body string, code http2.ErrCode) {
	t.Helper()
	c, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, fields...)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%v (status %q)", err, status)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			status = f.PseudoValue("status")
		case *http2.DataFrame:
			body += string(f.Data())
			if f.StreamEnded() {
				return status, body, 0
			}
		case *http2.RSTStreamFrame:
			return status, body, f.ErrCode
		case *http2.GoAwayFrame:
			return status, body, f.ErrCode
		}
	}
}

// TestRequestTarget checks :authority, Host and :path against RFC 9113
// section 8.3.1: a malformed request is a stream error of type
// PROTOCOL_ERROR (section 8.1.1) and never reaches the handler.
func TestRequestTarget(t *testing.T) {
	addr, _ := start(t, echo)
	req := func(extra ...[2]string) [][2]string {
		return append([][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", "/p"}}, extra...)
	}
	cases := []struct {
		name   string
		fields [][2]string
		want   string // body from echo, or "" for PROTOCOL_ERROR
	}{
		{"8.3.1 :authority", req([2]string{":authority", "example.org"}), "GET /p HTTP/2.0 host=example.org"},
		{"8.3.1 Host without :authority", req([2]string{"host", "example.org"}), "GET /p HTTP/2.0 host=example.org"},
		{"8.3.1 Host same as :authority", req([2]string{":authority", "example.org"}, [2]string{"host", "Example.ORG"}), "GET /p HTTP/2.0 host=example.org"},
		{"8.3.1 Host same but for the default port", req([2]string{":authority", "example.org:443"}, [2]string{"host", "example.org"}), "GET /p HTTP/2.0 host=example.org:443"},
		{"8.3.1 Host names another entity", req([2]string{":authority", "example.org"}, [2]string{"host", "evil.example"}), ""},
		{"8.3.1 neither :authority nor Host", req(), ""},
		{"8.3.1 two Host fields", req([2]string{"host", "a.example"}, [2]string{"host", "b.example"}), ""},
		{"8.3.1 userinfo in :authority", req([2]string{":authority", "user@example.org"}), ""},
		{"8.3.1 space in :authority", req([2]string{":authority", "exa mple.org"}), ""},
		{"8.3.1 bad port in :authority", req([2]string{":authority", "example.org:x"}), ""},
		{"9110 4.2.1 port without host in :authority", req([2]string{":authority", ":443"}), ""},
		{"8.3.1 userinfo in Host", req([2]string{"host", "user@example.org"}), ""},
		{"8.3.1 space in :path", [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/a b"}}, ""},
		{"8.3.1 fragment in :path", [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/a#b"}}, ""},
		{"8.3.1 UTF-8 in :path", [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/é"}}, "GET /é HTTP/2.0 host=a"},
		{"8.5 CONNECT", [][2]string{{":method", "CONNECT"}, {":authority", "example.org:443"}}, "CONNECT  HTTP/2.0 host=example.org:443"},
		// Content-Length as HTTP/1.1 reads it (one shared parser): digits only.
		{"8.1.1 content-length 0", req([2]string{":authority", "a"}, [2]string{"content-length", "0"}), "GET /p HTTP/2.0 host=a"},
		{"8.1.1 content-length +0", req([2]string{":authority", "a"}, [2]string{"content-length", "+0"}), ""},
		{"8.1.1 content-length -0", req([2]string{":authority", "a"}, [2]string{"content-length", "-0"}), ""},
		{"8.1.1 content-length 0x0", req([2]string{":authority", "a"}, [2]string{"content-length", "0x0"}), ""},
		{"8.5 CONNECT with userinfo", [][2]string{{":method", "CONNECT"}, {":authority", "u@example.org:443"}}, ""},
	}
	for _, tc := range cases {
		_, body, code := rawRequest(t, addr, tc.fields)
		switch {
		case tc.want == "" && code != http2.ErrCodeProtocol:
			t.Errorf("%s: got body %q, code %v; want PROTOCOL_ERROR", tc.name, body, code)
		case tc.want != "" && body != tc.want:
			t.Errorf("%s: got body %q, code %v; want %q", tc.name, body, code, tc.want)
		}
	}
}

// TestLargeHeaderField: one header field larger than the header limit
// (a 40 KB cookie) gets 431 for its stream, as over HTTP/1.1, and the
// connection goes on; it is not a COMPRESSION_ERROR for the connection
// (RFC 9113 section 10.5.1 leaves the choice; 431 is what clients show).
func TestLargeHeaderField(t *testing.T) {
	addr, _ := start(t, echo)
	c, fr := rawConn(t, addr)
	send := func(id uint32, cookie string) {
		writeHeaders(fr, id, true, [2]string{":method", "GET"}, [2]string{":scheme", "https"}, [2]string{":authority", "a.example"}, [2]string{":path", "/p"}, [2]string{"cookie", cookie})
	}
	statusOf := func(id uint32) string {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("stream %d: %v", id, err)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				if f.StreamID == id {
					return f.PseudoValue("status")
				}
			case *http2.GoAwayFrame:
				t.Fatalf("stream %d: GOAWAY %v", id, f.ErrCode)
			}
		}
	}
	send(1, strings.Repeat("a", 40000))
	if s := statusOf(1); s != "431" {
		t.Errorf("40 KB cookie: status %s, want 431", s)
	}
	send(3, "small=1")
	if s := statusOf(3); s != "200" {
		t.Errorf("next request on the connection: status %s", s)
	}
}

// TestFramesAfterOurResetIgnored: DATA the client sent before it saw our
// RST_STREAM (a 431 refused while the upload was on its way) is ignored,
// not answered with STREAM_CLOSED for every frame (RFC 9113 section 5.1,
// "closed"), and the connection goes on.
func TestFramesAfterOurResetIgnored(t *testing.T) {
	addr, _ := start(t, echo)
	c, fr := rawConn(t, addr)
	headers := func(id uint32, cookie string, end bool) {
		writeHeaders(fr, id, end, [2]string{":method", "POST"}, [2]string{":scheme", "https"}, [2]string{":authority", "a.example"}, [2]string{":path", "/p"}, [2]string{"cookie", cookie})
	}
	headers(1, strings.Repeat("a", 40000), false)
	chunk := make([]byte, 8<<10)
	for i := 0; i < 6; i++ { // within the initial 64 KiB window
		fr.WriteData(1, false, chunk)
	}
	headers(3, "small=1", true)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%v after %v", err, got)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			got = append(got, fmt.Sprintf("%d:%s", f.StreamID, f.PseudoValue("status")))
		case *http2.RSTStreamFrame:
			got = append(got, fmt.Sprintf("%d:rst-%v", f.StreamID, f.ErrCode))
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v after %v", f.ErrCode, got)
		case *http2.DataFrame:
			if f.StreamID == 3 && f.StreamEnded() {
				want := []string{"1:431", "1:rst-NO_ERROR", "3:200"}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("frames %v, want %v", got, want)
				}
				return
			}
		}
	}
}

// TestEarlyAnswerDuringUpload: a handler that answers (413) without reading
// the body. A body that fits the stream window is let in and dropped, so
// the response is not followed by a RST_STREAM (curl 7.88 reports one as a
// failure); a larger one gets RST_STREAM NO_ERROR (RFC 9113 section 8.1)
// and the DATA still in flight is ignored. The connection goes on.
func TestEarlyAnswerDuringUpload(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			return
		}
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	}))
	for _, tc := range []struct {
		size int
		rst  bool
	}{
		{100 << 10, false},
		{1 << 20, true},
	} {
		c, fr := rawConn(t, addr)
		fr.WriteWindowUpdate(0, 1<<30)
		req := func(id uint32, path string, size int) {
			writeHeaders(fr, id, size == 0, [2]string{":method", "POST"}, [2]string{":scheme", "https"}, [2]string{":authority", "a.example"}, [2]string{":path", path}, [2]string{"content-length", fmt.Sprint(size)})
		}
		req(1, "/upload", tc.size)
		// Send what the windows allow (the server's stream window is
		// 256 KiB): the rest of a larger body would wait for window.
		chunk := make([]byte, 16<<10)
		for sent, limit := 0, min(tc.size, 256<<10); sent < limit; {
			n := min(len(chunk), limit-sent)
			sent += n
			fr.WriteData(1, sent == tc.size, chunk[:n])
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		status := map[uint32]string{}
		rst := map[uint32]http2.ErrCode{}
		req(3, "/ok", 0)
		// Read until stream 1 is answered and a request sent after that
		// (stream 5) is answered too: by then stream 1's end is decided.
		sent5 := false
		for gotRST := false; status[5] == "" || tc.rst && !gotRST; _, gotRST = rst[1] {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("size %d: %v (status %v, resets %v)", tc.size, err, status, rst)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				status[f.StreamID] = f.PseudoValue("status")
			case *http2.RSTStreamFrame:
				rst[f.StreamID] = f.ErrCode
			case *http2.GoAwayFrame:
				t.Fatalf("size %d: GOAWAY %v", tc.size, f.ErrCode)
			}
			if !sent5 && status[1] != "" && status[3] != "" {
				sent5 = true
				req(5, "/ok", 0)
			}
		}
		if status[1] != "413" || status[3] != "200" || status[5] != "200" {
			t.Errorf("size %d: statuses %v", tc.size, status)
		}
		if code, ok := rst[1]; ok != tc.rst || ok && code != http2.ErrCodeNo {
			t.Errorf("size %d: resets %v, want a RST_STREAM NO_ERROR for stream 1: %v", tc.size, rst, tc.rst)
		}
		if len(rst) > 1 || len(rst) == 1 && !tc.rst {
			t.Errorf("size %d: resets %v", tc.size, rst)
		}
		c.Close()
	}
}

// TestExpectContinue: a request with "Expect: 100-continue" gets a 100
// (a HEADERS frame with :status 100 and no field but Date) when the handler first reads
// its body, before the client has sent any of it (RFC 9110 section
// 10.1.1; curl, .NET and Go's client otherwise wait a second or more); a
// handler that answers without reading gets no 100.
func TestExpectContinue(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	for _, path := range []string{"/echo", "/refuse"} {
		c, fr := rawConn(t, addr)
		writeHeaders(fr, 1, false, append(reqFields("POST", path), [2]string{"expect", "100-continue"}, [2]string{"content-length", "5"})...)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var statuses []string
		var got []byte
		for done := false; !done; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("%s: after %v: %v", path, statuses, err)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				s := f.PseudoValue("status")
				statuses = append(statuses, s)
				if s == "100" {
					extra := 0
					for _, hf := range f.RegularFields() {
						if hf.Name != "date" { // RFC 9110 section 6.6.1 lets a 1xx have one
							extra++
						}
					}
					if extra != 0 || f.StreamEnded() {
						t.Errorf("%s: the 100 carries %v, END_STREAM %v", path, f.RegularFields(), f.StreamEnded())
					}
					fr.WriteData(1, true, []byte("hello"))
				}
				done = f.StreamEnded()
			case *http2.DataFrame:
				got = append(got, f.Data()...)
				done = f.StreamEnded()
			}
		}
		want, wantBody := "100 200", "hello"
		if path == "/refuse" {
			want, wantBody = "413", ""
		}
		if s := strings.Join(statuses, " "); s != want || string(got) != wantBody {
			t.Errorf("%s: statuses %q body %q, want %q %q", path, s, got, want, wantBody)
		}
	}
}

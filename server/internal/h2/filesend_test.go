package h2_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// fileServer answers with the file at path copied by io.CopyN (the
// static handler's way): /full the whole file, /short a Content-Length
// 10 bytes short of the file (the copy must stop there), /range?off=N
// from offset N on. copyErr gets ReadFrom's error for /short.
func fileServer(t *testing.T, path string, size int64, copyErr chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		switch r.URL.Path {
		case "/full":
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			w.WriteHeader(200)
			io.CopyN(w, f, size)
		case "/short":
			w.Header().Set("Content-Length", strconv.FormatInt(size-10, 10))
			w.WriteHeader(200)
			_, err := w.(io.ReaderFrom).ReadFrom(f)
			copyErr <- err
		case "/range":
			off, _ := strconv.ParseInt(r.URL.Query().Get("off"), 10, 64)
			f.Seek(off, io.SeekStart)
			w.Header().Set("Content-Length", strconv.FormatInt(size-off, 10))
			w.WriteHeader(200)
			io.CopyN(w, f, size-off)
		}
	})
}

func tempFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestSendFile: files copied into the response (read straight into the
// output, filesend.go) arrive whole and unchanged, alone on their
// connection, several at once on one connection, from an offset, and for
// HEAD without a body; a declared length shorter than the file stops the
// copy there with http.ErrContentLength.
func TestSendFile(t *testing.T) {
	const size = 3<<20 + 12345
	path, data := tempFile(t, size)
	copyErr := make(chan error, 1)
	addr, _ := start(t, fileServer(t, path, size, copyErr))
	c := client()
	base := "https://" + addr

	if _, body := get(t, c, base+"/full"); body != string(data) {
		t.Errorf("alone: %d bytes, equal %v", len(body), body == string(data))
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := i * 100003
			resp, err := c.Get(base + "/range?off=" + strconv.Itoa(off))
			if err != nil {
				t.Error(err)
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(b, data[off:]) {
				t.Errorf("concurrent from %d: %d bytes, %v", off, len(b), err)
			}
		}()
	}
	wg.Wait()

	req, _ := http.NewRequest("HEAD", base+"/full", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) != 0 || resp.ContentLength != size {
		t.Errorf("HEAD: %d body bytes, length %d", len(b), resp.ContentLength)
	}

	_, body := get(t, c, base+"/short")
	if body != string(data[:size-10]) {
		t.Errorf("short: %d bytes", len(body))
	}
	if err := <-copyErr; !errors.Is(err, http.ErrContentLength) {
		t.Errorf("short: ReadFrom returned %v, want %v", err, http.ErrContentLength)
	}
}

// TestSendFileWindows: a file sent to a client whose stream window is
// small and credited a little at a time never exceeds the windows (each
// DATA frame fits what was granted) and arrives whole.
func TestSendFileWindows(t *testing.T) {
	const size = 300<<10 + 7
	path, data := tempFile(t, size)
	addr, _ := start(t, fileServer(t, path, size, nil))
	c, fr := rawConn(t, addr)
	const win = 1000
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: win})
	writeHeaders(fr, 1, true, reqFields("GET", "/full")...)
	var got []byte
	stream, conn := int64(win), int64(65535)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		d, ok := f.(*http2.DataFrame)
		if !ok {
			if rst, ok := f.(*http2.RSTStreamFrame); ok {
				t.Fatalf("reset after %d bytes: %v", len(got), rst.ErrCode)
			}
			continue
		}
		n := int64(len(d.Data()))
		stream, conn = stream-n, conn-n
		if stream < 0 || conn < 0 {
			t.Fatalf("DATA of %d bytes beyond the window (stream %d, connection %d after it)", n, stream, conn)
		}
		got = append(got, d.Data()...)
		if d.StreamEnded() {
			break
		}
		if stream == 0 {
			// Credit in odd steps, the connection's only when low.
			fr.WriteWindowUpdate(1, 777)
			stream += 777
			if conn < 64<<10 {
				fr.WriteWindowUpdate(0, 1<<20)
				conn += 1 << 20
			}
		}
	}
	if !bytes.Equal(got, data) {
		t.Errorf("got %d bytes, equal %v", len(got), bytes.Equal(got, data))
	}
}

// TestSendFilePipe: a pipe is an *os.File too, but its reads wait for its
// writer: copying from it must not hold up the connection's other
// streams (here the writer waits for another stream's response).
func TestSendFilePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pipe" {
			w.WriteHeader(200)
			w.(io.ReaderFrom).ReadFrom(pr)
			return
		}
		io.WriteString(w, "other")
	}))
	c := client()
	get(t, c, "https://"+addr+"/warm") // one connection for both streams
	time.Sleep(100 * time.Millisecond) // and its stream ended: /pipe's is alone
	piped := make(chan string, 1)
	go func() {
		resp, err := c.Get("https://" + addr + "/pipe")
		if err != nil {
			piped <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		piped <- string(b)
	}()
	time.Sleep(200 * time.Millisecond) // the pipe's handler waits in its read
	done := make(chan string, 1)
	go func() {
		_, body := get(t, c, "https://"+addr+"/other")
		done <- body
	}()
	select {
	case body := <-done:
		if body != "other" {
			t.Errorf("other stream: %q", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stream copying from a pipe held up the connection's other stream")
	}
	pw.Write([]byte("from the pipe"))
	pw.Close()
	if got := <-piped; got != "from the pipe" {
		t.Errorf("pipe: %q", got)
	}
}

package server_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestLargeStaticStallH2: a large static file whose client stops granting
// flow-control window is handled by the HTTP/2 engine's stall rule, as a
// small file, PHP or the proxy are: after the write timeout the stream is
// reset with CANCEL and, nothing on the connection moving, the connection
// gets GOAWAY ENHANCE_YOUR_CALM and is closed.
func TestLargeStaticStallH2(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "ok")
	if err := os.WriteFile(filepath.Join(root, "large.bin"), bytes.Repeat([]byte("x"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	e := servertest.StartWith(t, server.Options{WriteTimeout: timeout}, siteFor(`"a.example"`, root, true))
	c, err := net.DialTimeout("tcp", e.HTTPS, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(tc, tc)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 16 << 10})
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.example"}, {":path", "/large.bin"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: true})
	start := time.Now()
	tc.SetReadDeadline(start.Add(10 * time.Second))
	var data int
	var rst *http2.ErrCode
	var goAway *http2.ErrCode
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after %v (write timeout %v)", time.Since(start), timeout)
			}
			break // closed
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			data += len(f.Data())
		case *http2.RSTStreamFrame:
			code := f.ErrCode
			rst = &code
		case *http2.GoAwayFrame:
			code := f.ErrCode
			goAway = &code
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		}
	}
	took := time.Since(start)
	if data > 16<<10 {
		t.Errorf("got %d bytes of DATA with a 16 KiB window", data)
	}
	if rst == nil || *rst != http2.ErrCodeCancel {
		t.Errorf("RST_STREAM %v, want CANCEL", rst)
	}
	if goAway == nil || *goAway != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", goAway)
	}
	if took > 5*time.Second {
		t.Errorf("closed after %v with a %v write timeout", took, timeout)
	}
	if resp, body := e.Clients()[2].Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("next client: %d %q", resp.StatusCode, body)
	}
}

package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/integration/harness"
	"github.com/coder/websocket"
)

// proxySeed lays out the seed's tree (writeSeed) and points its /proxy/
// route at upstream. The /app/ FastCGI route is left out: it needs
// php-fpm, which the FastCGI tests cover.
func proxySeed(t *testing.T, upstream string) *seedEnv {
	t.Helper()
	e := writeSeed(t)
	b, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`upstreams = \["[^"]*"\]`).ReplaceAllString(string(b), `upstreams = ["`+upstream+`"]`)
	s = regexp.MustCompile(`(?m)^\[\[routes\]\]\npath = "/app/"\n.*\n\n`).ReplaceAllString(s, "")
	if !strings.Contains(s, `type = "proxy", upstreams = ["`+upstream+`"], strip_prefix = true, forward_headers = false`) || strings.Contains(s, "fastcgi") {
		t.Fatalf("rewriting the seed went wrong:\n%s", s)
	}
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// appUpstream stands for the Go app behind the proxy.
func appUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			c.Write(r.Context(), typ, append([]byte("echo: "), msg...))
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "uri=%s xff=%q host=%s\n%s", r.RequestURI, r.Header.Get("X-Forwarded-For"), r.Host,
			strings.Repeat("<p>a page from the app behind the proxy</p>\n", 100))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func TestSeedProxyRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the arka binary")
	}
	up := appUpstream(t)
	e := proxySeed(t, up)
	httpAddr, httpsAddr := e.http, e.https
	if code, out := harness.Run(t, "-t", "-c", e.file); code != 0 {
		t.Fatalf("arka -t rejected the seed: %s", out)
	}
	harness.Start(t, nil, []string{"-c", e.file, "-state", t.TempDir()}, e.http, e.https)
	h1, h2 := harness.Clients()

	t.Run("http", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+httpAddr+"/proxy/a%2Fb?x=1&y=%41", nil)
		req.Host = "bench.local"
		req.Header.Set("X-Forwarded-For", "6.6.6.6")
		resp, body := do(t, h1, req)
		if resp.StatusCode != 200 || !strings.HasPrefix(body, `uri=/a%2Fb?x=1&y=%41 xff="" host=bench.local`) {
			t.Fatalf("%d %.80q", resp.StatusCode, body)
		}
	})
	t.Run("https_h2_zstd", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "https://"+httpsAddr+"/proxy/page", nil)
		req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
		resp, _ := do(t, h2, req)
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 || resp.Header.Get("Content-Encoding") != "zstd" {
			t.Fatalf("%d over HTTP/%d, Content-Encoding %q", resp.StatusCode, resp.ProtoMajor, resp.Header.Get("Content-Encoding"))
		}
		req, _ = http.NewRequest("GET", "https://"+httpsAddr+"/proxy/page", nil)
		req.Header.Set("Accept-Encoding", "br")
		if resp, _ := do(t, h2, req); resp.Header.Get("Content-Encoding") != "br" {
			t.Fatalf("br-only client got %q", resp.Header.Get("Content-Encoding"))
		}
	})
	t.Run("static_still_served", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+httpAddr+"/", nil)
		if resp, body := do(t, h1, req); resp.StatusCode != 200 || body != string(e.page) {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
	for _, scheme := range []string{"ws://" + httpAddr, "wss://" + httpsAddr} {
		t.Run("websocket_"+scheme[:strings.Index(scheme, ":")], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			c, _, err := websocket.Dial(ctx, scheme+"/proxy/ws", &websocket.DialOptions{HTTPClient: client})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.CloseNow()
			for i := 0; i < 3; i++ {
				msg := fmt.Sprintf("hello %d", i)
				c.Write(ctx, websocket.MessageText, []byte(msg))
				if _, got, err := c.Read(ctx); err != nil || string(got) != "echo: "+msg {
					t.Fatalf("%q %v", got, err)
				}
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
}

func TestProxyUpstreamDownAnswers502(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the arka binary")
	}
	dead := harness.FreeAddr(t)
	e := proxySeed(t, dead)
	p := harness.Start(t, nil, []string{"-c", e.file, "-state", t.TempDir()}, e.http)
	req, _ := http.NewRequest("GET", "http://"+e.http+"/proxy/", nil)
	resp, _ := do(t, &http.Client{Timeout: 20 * time.Second}, req)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	p.WaitOutput(t, "upstream="+dead)
	p.WaitOutput(t, "connection refused")
}

func TestProxyConfigMistakesFailCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the arka binary")
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, handler, want string }{
		{"empty", `{ type = "proxy", upstreams = [] }`, "at least one upstream"},
		{"badaddr", `{ type = "proxy", upstreams = ["127.0.0.1:99999"] }`, "upstream"},
		{"scheme", `{ type = "proxy", upstreams = ["ftp://app:21"] }`, "only http:// and https://"},
		{"unknown", `{ type = "proxy", upstreams = ["127.0.0.1:8080"], stip_prefix = true }`, "stip_prefix"},
		{"lb", `{ type = "proxy", upstreams = ["127.0.0.1:8080"], lb = "random" }`, "lb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, c.name+".toml")
			site := "listen = [\"127.0.0.1:1\"]\n\n[[routes]]\npath = \"/proxy/\"\nhandler = " + c.handler + "\n"
			os.WriteFile(f, []byte(site), 0o644)
			code, out := harness.Run(t, "-t", "-c", f)
			loc := regexp.MustCompile(regexp.QuoteMeta(f) + `:\d+:\d+: `)
			if code == 0 || !loc.MatchString(out) || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want file:line:col and %q:\n%s", code, c.want, out)
			}
		})
	}
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

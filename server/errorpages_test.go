package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

func TestCustomErrorPages(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "home")
	errs := filepath.Join(dir, "errors")
	os.Mkdir(errs, 0o755)
	os.WriteFile(filepath.Join(errs, "404.html"), []byte("<p>custom not found</p>\n"), 0o644)
	os.WriteFile(filepath.Join(errs, "5xx.html"), []byte("<p>custom server error</p>\n"), 0o644)
	os.WriteFile(filepath.Join(errs, "403.txt"), []byte("custom forbidden\n"), 0o644)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Set-Cookie", "s=1")
		switch r.URL.Path {
		case "/api/boom":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("stack trace of the app"))
		case "/api/teapot":
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte("app's own 418"))
		default:
			w.Write([]byte("fine"))
		}
	}))
	defer up.Close()
	dead := servertest.FreeAddr(t)
	site := func(names string, intercept bool) string {
		ic := ""
		if intercept {
			ic = "intercept_errors = true\n"
		}
		return `server_names = [` + names + `]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[errors]
root = "` + errs + `"
pages = { "404" = "404.html", "5xx" = "5xx.html", "403" = "403.txt" }
` + ic + `[[routes]]
path = "/"
handler = { type = "static", root = "` + root + `" }
headers = { set = { X-Site = "yes" } }
[[routes]]
path = "/api/"
handler = { type = "proxy", upstreams = ["` + up.Listener.Addr().String() + `"] }
[[routes]]
path = "/down/"
handler = { type = "proxy", upstreams = ["` + dead + `"] }
[[routes]]
path = "/private/"
handler = { type = "static", root = "` + root + `" }
deny = ["0.0.0.0/0", "::/0"]
`
	}
	e := servertest.Start(t, "default = true\n"+site(`"a.example"`, true), site(`"b.example"`, false))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, host := range []string{"a.example", "b.example"} {
			resp, body := c.Get(t, "/missing", "Host: "+host)
			if resp.StatusCode != 404 || string(body) != "<p>custom not found</p>\n" || resp.Header.Get("X-Site") != "yes" ||
				resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("%s 404: %d %q %v", host, resp.StatusCode, body, resp.Header)
			}
			resp, body = c.Do(t, http.MethodHead, "/missing", "Host: "+host)
			if resp.StatusCode != 404 || len(body) != 0 || resp.ContentLength != int64(len("<p>custom not found</p>\n")) {
				t.Errorf("%s HEAD 404: %d %q %d", host, resp.StatusCode, body, resp.ContentLength)
			}
			resp, body = c.Get(t, "/private/", "Host: "+host)
			if resp.StatusCode != 403 || string(body) != "custom forbidden\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("%s 403: %d %q %v", host, resp.StatusCode, body, resp.Header)
			}
			// Arka's own 502 for an upstream that is down.
			resp, body = c.Get(t, "/down/x", "Host: "+host)
			if resp.StatusCode != 502 || string(body) != "<p>custom server error</p>\n" {
				t.Errorf("%s 502: %d %q", host, resp.StatusCode, body)
			}
		}
		// intercept_errors: the upstream's 500 body is replaced, its status and cookie kept.
		resp, body := c.Get(t, "/api/boom", "Host: a.example", "Accept-Encoding: gzip")
		if resp.StatusCode != 500 || string(body) != "<p>custom server error</p>\n" || resp.Header.Get("Set-Cookie") != "s=1" ||
			resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("X-Site") != "" {
			t.Errorf("intercepted 500: %d %q %v", resp.StatusCode, body, resp.Header)
		}
		// A status without a page goes through.
		resp, body = c.Get(t, "/api/teapot", "Host: a.example")
		if resp.StatusCode != 418 || string(body) != "app's own 418" {
			t.Errorf("418: %d %q", resp.StatusCode, body)
		}
		resp, body = c.Get(t, "/api/ok", "Host: a.example")
		if resp.StatusCode != 200 || string(body) != "fine" {
			t.Errorf("200: %d %q", resp.StatusCode, body)
		}
		// Without intercept_errors the application's error body goes through.
		resp, body = c.Get(t, "/api/boom", "Host: b.example")
		if resp.StatusCode != 500 || string(body) != "stack trace of the app" {
			t.Errorf("not intercepted: %d %q", resp.StatusCode, body)
		}
	})
}

// The built-in error page is readable on a phone.
func TestBuiltinErrorPage(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "x"), true))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/nope")
		b := string(body)
		if resp.StatusCode != 404 || !strings.Contains(b, `<meta name="viewport" content="width=device-width, initial-scale=1">`) ||
			!strings.Contains(b, `<meta charset="utf-8">`) || !strings.Contains(b, `<html lang="en">`) {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

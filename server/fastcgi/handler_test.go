package fastcgi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/fastcgi/fpmtest"
)

func TestHello(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			res, body := get(t, p.client, p.url+"/app/hello.php")
			if res.StatusCode != http.StatusOK || body != "hello from php\n" {
				t.Fatalf("got %d %q", res.StatusCode, body)
			}
			if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Errorf("Content-Type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

package server_test

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/arkaweb/arka/server/servertest"
)

// A burst of parallel wrong passwords from one client (QA H3: 128 over one
// HTTP/2 connection) is refused at once with 429 (or 503 while every
// comparison slot is busy) instead of running 128 bcrypt comparisons: at
// most 10 guesses are ever compared and answered 401, the client is then
// locked out, and meanwhile another client's request to another route and
// remembered good credentials from a third are answered within a second.
// The hash has `arka hash-password`'s cost, so that unbounded comparisons
// would starve the server as they do in production.
func TestBasicAuthParallelGuesses(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	cheap, err := bcrypt.GenerateFromPassword([]byte("battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
trusted_proxies = ["127.0.0.1"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "respond", body = "family photos" }
basic_auth = { realm = "family", users = { alice = "`+string(hash)+`", bob = "`+string(cheap)+`" } }
[[routes]]
path = "/open/"
handler = { type = "respond", body = "open" }
`)
	cs := e.Clients()
	h1, h2 := cs[0], cs[2]
	get := func(c *servertest.Client, path string, hdr ...string) (int, http.Header, time.Duration, error) {
		req, err := http.NewRequest("GET", c.Base+path, nil)
		if err != nil {
			return 0, nil, 0, err
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		start := time.Now()
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return 0, nil, time.Since(start), err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header, time.Since(start), err
	}
	auth := func(user, pass string) string {
		req, _ := http.NewRequest("GET", "/", nil)
		req.SetBasicAuth(user, pass)
		return req.Header.Get("Authorization")
	}
	good := auth("alice", "correct horse")
	for _, c := range []*servertest.Client{h1, h2} { // remembered; both connections open
		if code, _, _, err := get(c, "/", "X-Forwarded-For", "192.0.2.10", "Authorization", good); code != 200 {
			t.Fatalf("good credentials over %s: %d %v", c.Name, code, err)
		}
	}

	const attempts = 128
	attacker := "198.51.100.1"
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		slowest  time.Duration
	)
	start := time.Now()
	for i := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, hdr, took, err := get(h2, "/", "X-Forwarded-For", attacker, "Authorization", auth("alice", "guess "+strconv.Itoa(i)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("guess %d: %v", i, err)
				return
			}
			statuses[code]++
			if code != 401 {
				slowest = max(slowest, took)
			}
			if code != 401 && hdr.Get("Retry-After") == "" {
				t.Errorf("guess %d: %d without Retry-After", i, code)
			}
		}()
	}
	// Meanwhile other clients are served.
	for i := range 5 {
		time.Sleep(20 * time.Millisecond)
		if code, _, took, err := get(h1, "/open/", "X-Forwarded-For", "203.0.113.7"); code != 200 || took > time.Second {
			t.Errorf("other route during the burst (%d): %d after %v (%v), want 200 within 1 s", i, code, took, err)
		}
		if code, _, took, err := get(h1, "/", "X-Forwarded-For", "192.0.2.10", "Authorization", good); code != 200 || took > time.Second {
			t.Errorf("remembered credentials during the burst (%d): %d after %v (%v), want 200 within 1 s", i, code, took, err)
		}
	}
	wg.Wait()
	t.Logf("%d parallel guesses: %v in %v, slowest refusal %v", attempts, statuses, time.Since(start), slowest)
	if statuses[401] > 10 || statuses[401]+statuses[429]+statuses[503] != attempts {
		t.Errorf("parallel guesses answered %v: want at most 10 compared (401), the rest 429 or 503", statuses)
	}
	if statuses[429] == 0 {
		t.Errorf("parallel guesses answered %v: none refused with 429", statuses)
	}
	if slowest > 2*time.Second {
		t.Errorf("slowest refusal of a guess: %v, want under 2 s", slowest)
	}
	// Sequential guesses then reach the lockout after 10 failures in all:
	// the parallel ones were counted (failures count by client, whatever
	// the user: bob's cheap hash keeps this part quick).
	failures := statuses[401]
	for i := range 20 {
		code, hdr, _, err := get(h1, "/", "X-Forwarded-For", attacker, "Authorization", auth("bob", "again "+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if code == 429 && hdr.Get("Retry-After") == "60" {
			break
		}
		if code != 401 {
			t.Fatalf("sequential guess %d: %d", i, code)
		}
		failures++
	}
	if failures != 10 {
		t.Errorf("%d guesses compared before the lockout, want 10", failures)
	}
	// The lockout is the attacker's alone: remembered credentials from
	// another client still work.
	if code, _, _, err := get(h2, "/", "X-Forwarded-For", "192.0.2.10", "Authorization", good); code != 200 {
		t.Errorf("remembered credentials after the burst: %d %v", code, err)
	}
	e.CloseClients()
}

package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/arkaweb/arka/config"
)

// An unknown user costs a bcrypt comparison as a wrong password for a
// known user does, against the most expensive of the users' hashes, so
// the answer's timing does not tell which user names exist; good
// credentials are compared once, and a client over its failure limit is
// refused without a comparison. Comparisons are counted rather than timed
// (TestBasicAuth covers the rest through real clients).
func TestBasicAuthComparisons(t *testing.T) {
	cheap, err := bcrypt.GenerateFromPassword([]byte("correct horse"), 4)
	if err != nil {
		t.Fatal(err)
	}
	dear, err := bcrypt.GenerateFromPassword([]byte("battery staple"), 6)
	if err != nil {
		t.Fatal(err)
	}
	a := newBasicAuth(&config.BasicAuth{Realm: "family", Users: map[string]string{"alice": string(cheap), "bob": string(dear)}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	var compared [][]byte
	a.compare = func(hash, password []byte) error {
		compared = append(compared, hash)
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	try := func(from, user, pass string) int {
		t.Helper()
		compared = nil
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = from + ":1234"
		r.SetBasicAuth(user, pass)
		w := httptest.NewRecorder()
		if a.check(w, r, nil, config.ClientIPXForwardedFor) {
			return http.StatusOK
		}
		return w.Code
	}
	for _, tc := range []struct {
		user, pass string
		status     int
		hash       []byte // the one comparison made
	}{
		{"mallory", "wrong", 401, dear}, // unknown: the dearest hash
		{"alice", "wrong", 401, cheap},
		{"bob", "wrong", 401, dear},
		{"alice", "correct horse", 200, cheap},
		{"bob", "battery staple", 200, dear},
		{"", "", 401, dear},
	} {
		if got := try("192.0.2.1", tc.user, tc.pass); got != tc.status || len(compared) != 1 || !bytes.Equal(compared[0], tc.hash) {
			t.Errorf("%s/%s: %d after %d comparisons, want %d after one against %s", tc.user, tc.pass, got, len(compared), tc.status, tc.hash)
		}
	}
	if got := try("192.0.2.1", "alice", "correct horse"); got != 200 || len(compared) != 0 {
		t.Errorf("good credentials again: %d after %d comparisons, want 200 from the cache", got, len(compared))
	}
	for range authMaxFailures {
		try("198.51.100.7", "mallory", "guess")
	}
	if got := try("198.51.100.7", "mallory", "guess"); got != http.StatusTooManyRequests || len(compared) != 0 {
		t.Errorf("over the failure limit: %d after %d comparisons, want 429 without one", got, len(compared))
	}
	// Remembered good credentials do not open a locked-out client's door
	// (else each guess is a cheap 429 and the right one a 200), and the
	// lockout is that client's alone.
	if got := try("198.51.100.7", "alice", "correct horse"); got != http.StatusTooManyRequests || len(compared) != 0 {
		t.Errorf("remembered credentials from a client over the failure limit: %d after %d comparisons, want 429 without one", got, len(compared))
	}
	if got := try("192.0.2.1", "alice", "correct horse"); got != 200 {
		t.Errorf("remembered credentials from another client: %d, want 200", got)
	}
}

// While a comparison runs it counts against its client: the client's
// attempts with other credentials get 429 with Retry-After: 1 at once,
// requests with the same credentials wait for its answer (a browser's
// parallel requests cost one comparison), another client finding every
// slot busy gets 503 with Retry-After: 1 at once, and a waiting request
// whose client has gone stops waiting. Nothing is timed: the comparison
// is held open by the test.
func TestBasicAuthInFlight(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), 4)
	if err != nil {
		t.Fatal(err)
	}
	a := newBasicAuth(&config.BasicAuth{Realm: "family", Users: map[string]string{"alice": string(hash)}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	a.slots = make(chan struct{}, 1)
	started, release := make(chan struct{}, 10), make(chan struct{})
	var compared atomic.Int32
	a.compare = func(hash, password []byte) error {
		compared.Add(1)
		started <- struct{}{}
		<-release
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	type answer struct {
		status     int
		retryAfter string
	}
	try := func(ctx context.Context, from, user, pass string) answer {
		r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
		r.RemoteAddr = from + ":1234"
		r.SetBasicAuth(user, pass)
		w := httptest.NewRecorder()
		if a.check(w, r, nil, config.ClientIPXForwardedFor) {
			return answer{status: http.StatusOK}
		}
		return answer{w.Code, w.Header().Get("Retry-After")}
	}
	async := func(ctx context.Context, from, user, pass string) chan answer {
		c := make(chan answer, 1)
		go func() { c <- try(ctx, from, user, pass) }()
		return c
	}
	bg := context.Background()

	first := async(bg, "192.0.2.1", "alice", "correct horse")
	<-started
	same := async(bg, "192.0.2.1", "alice", "correct horse") // waits for first
	gone, leave := context.WithCancel(bg)
	left := async(gone, "192.0.2.9", "alice", "correct horse")
	for _, tc := range []struct {
		from, pass string
		want       answer
	}{
		{"192.0.2.1", "guess", answer{http.StatusTooManyRequests, "1"}},       // the client's slot is taken
		{"198.51.100.7", "guess", answer{http.StatusServiceUnavailable, "1"}}, // every slot is taken
	} {
		if got := try(bg, tc.from, "alice", tc.pass); got != tc.want {
			t.Errorf("%s while a comparison runs: %v, want %v", tc.from, got, tc.want)
		}
	}
	leave()
	if got := <-left; got.status != http.StatusServiceUnavailable {
		t.Errorf("waiting request whose client left: %v, want 503", got)
	}
	close(release)
	for name, c := range map[string]chan answer{"first": first, "same credentials": same} {
		if got := <-c; got.status != http.StatusOK {
			t.Errorf("%s: %v, want 200", name, got)
		}
	}
	if n := compared.Load(); n != 1 {
		t.Errorf("%d comparisons, want 1", n)
	}

	// Failures in flight count toward the limit: with 9 failures counted,
	// a 10th guess being compared leaves no room for another.
	for i := range authMaxFailures - 1 {
		if got := try(bg, "203.0.113.5", "alice", "guess"+strconv.Itoa(i)); got.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %v", i+1, got)
		}
	}
	for len(started) > 0 {
		<-started
	}
	release = make(chan struct{})
	tenth := async(bg, "203.0.113.5", "alice", "tenth")
	<-started
	a.mu.Lock()
	f := *a.fails["203.0.113.5"]
	a.mu.Unlock()
	if f.n != authMaxFailures-1 || f.inflight != 1 {
		t.Errorf("client state while its 10th guess is compared: %+v", f)
	}
	close(release)
	if got := <-tenth; got.status != http.StatusUnauthorized {
		t.Errorf("10th guess: %v", got)
	}
	if got := try(bg, "203.0.113.5", "alice", "correct horse"); got != (answer{http.StatusTooManyRequests, "60"}) {
		t.Errorf("after 10 failures: %v, want 429 for the window", got)
	}
	if len(a.slots) != 0 || len(a.flights) != 0 {
		t.Errorf("after every answer: %d slots taken, %d comparisons in flight", len(a.slots), len(a.flights))
	}
}

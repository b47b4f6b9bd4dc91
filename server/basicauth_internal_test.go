package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
		if a.check(w, r, nil) {
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

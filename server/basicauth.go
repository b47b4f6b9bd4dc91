package server

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/realip"
)

// Limits of basic_auth, in one place.
const (
	// authMaxFailures failed attempts per client address within
	// authFailWindow are allowed; further attempts get 429 with
	// Retry-After until the window ends, without a bcrypt comparison.
	authMaxFailures = 10
	authFailWindow  = time.Minute
	// authMaxClients bounds the addresses whose failures are counted; when
	// full, expired windows are dropped, then the oldest half.
	authMaxClients = 4096
	// authCacheSize bounds the remembered good credentials: browsers send
	// them with every request, and a bcrypt comparison costs tens of
	// milliseconds on a Raspberry Pi.
	authCacheSize = 256
)

// basicAuth is HTTP Basic authentication (RFC 7617) against bcrypt hashes.
type basicAuth struct {
	challenge []string // WWW-Authenticate value
	users     map[string][]byte
	// dummy is compared against for unknown users, so that an unknown user
	// costs a bcrypt comparison as a known one does: the answer's timing
	// does not tell which user names exist. It is the most expensive of
	// the users' hashes (no password matching it is accepted for anyone
	// but that user).
	dummy []byte
	log   *slog.Logger
	// compare checks a password against a bcrypt hash:
	// bcrypt.CompareHashAndPassword (a test counts the comparisons).
	compare func(hash, password []byte) error

	mu    sync.Mutex
	good  map[[sha256.Size]byte]struct{} // credentials that passed
	fails map[string]*authFails          // by client address
}

type authFails struct {
	start  time.Time
	n      int
	logged bool
}

var retryAfterWindow = []string{strconv.Itoa(int(authFailWindow / time.Second))}

func newBasicAuth(c *config.BasicAuth, log *slog.Logger) *basicAuth {
	a := &basicAuth{
		challenge: []string{`Basic realm="` + c.Realm + `", charset="UTF-8"`},
		users:     map[string][]byte{},
		log:       log,
		compare:   bcrypt.CompareHashAndPassword,
		good:      map[[sha256.Size]byte]struct{}{},
		fails:     map[string]*authFails{},
	}
	best := -1
	for u, h := range c.Users {
		a.users[u] = []byte(h)
		if cost, _ := bcrypt.Cost([]byte(h)); cost > best {
			best, a.dummy = cost, []byte(h)
		}
	}
	return a
}

// check reports whether r carries valid credentials; if not, it has
// answered 401 (or 429 for a client over its failure limit).
func (a *basicAuth) check(w http.ResponseWriter, r *http.Request, trusted []netip.Prefix) bool {
	user, pass, ok := r.BasicAuth()
	if ok {
		// A client over its failure limit is refused whatever it sends,
		// remembered good credentials too: were they let through, each
		// guess would cost the client a cheap 429 instead of a bcrypt
		// comparison and the right password would stand out as a 200.
		client := failureKey(realip.Client(r.RemoteAddr, r.Header, trusted))
		if a.limited(client) {
			w.Header()["Retry-After"] = retryAfterWindow
			errpage.Write(w, r, http.StatusTooManyRequests)
			return false
		}
		key := sha256.Sum256([]byte(user + "\x00" + pass))
		a.mu.Lock()
		_, good := a.good[key]
		a.mu.Unlock()
		if good {
			return true
		}
		hash, known := a.users[user]
		if !known {
			hash = a.dummy
		}
		if a.compare(hash, []byte(pass)) == nil && known {
			a.mu.Lock()
			if len(a.good) >= authCacheSize {
				clear(a.good)
			}
			a.good[key] = struct{}{}
			a.mu.Unlock()
			return true
		}
		a.fail(client, user)
	}
	w.Header()["Www-Authenticate"] = a.challenge
	errpage.Write(w, r, http.StatusUnauthorized)
	return false
}

// failureKey is what failed attempts are counted by: the client's IPv4
// address, or its IPv6 /64 (see clientNet).
func failureKey(client string) string {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return client
	}
	if p := clientNet(a); p.Addr().Is6() {
		return p.String()
	}
	return a.Unmap().String()
}

// limited reports whether client has used up its failed attempts.
func (a *basicAuth) limited(client string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.fails) == 0 {
		return false
	}
	f := a.fails[client]
	if f == nil {
		return false
	}
	if time.Since(f.start) >= authFailWindow {
		delete(a.fails, client)
		return false
	}
	return f.n >= authMaxFailures
}

// fail counts and logs a failed attempt.
func (a *basicAuth) fail(client, user string) {
	now := time.Now()
	a.mu.Lock()
	f := a.fails[client]
	if f == nil || now.Sub(f.start) >= authFailWindow {
		if len(a.fails) >= authMaxClients {
			a.prune(now)
		}
		f = &authFails{start: now}
		a.fails[client] = f
	}
	f.n++
	n, limit := f.n, f.n >= authMaxFailures && !f.logged
	if limit {
		f.logged = true
	}
	a.mu.Unlock()
	switch {
	case limit:
		a.log.Warn("basic auth: too many failed attempts; client refused (429) for the rest of the window",
			"client", client, "user", user, "failures", n, "window", authFailWindow)
	case n < authMaxFailures:
		a.log.Warn("basic auth: failed attempt", "client", client, "user", user, "failures", n)
	}
}

// prune drops expired windows, then, if still full, every other entry.
func (a *basicAuth) prune(now time.Time) {
	for k, f := range a.fails {
		if now.Sub(f.start) >= authFailWindow {
			delete(a.fails, k)
		}
	}
	i := 0
	for k := range a.fails {
		if len(a.fails) < authMaxClients {
			break
		}
		if i%2 == 0 {
			delete(a.fails, k)
		}
		i++
	}
}

package server

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
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
	// Attempts still being compared count as failed until they end, so
	// that parallel guesses meet the same limit as sequential ones.
	authMaxFailures = 10
	authFailWindow  = time.Minute
	// authClientComparisons bounds the comparisons one client address
	// runs at a time; its further attempts with other credentials get 429
	// with Retry-After: 1 at once (requests with the same credentials
	// wait for that comparison's answer instead: a browser sends its
	// remembered credentials with every parallel request).
	authClientComparisons = 1
	// authMaxClients bounds the addresses whose failures are counted; when
	// full, expired windows are dropped, then the oldest half.
	authMaxClients = 4096
	// authCacheSize bounds the remembered good credentials: browsers send
	// them with every request, and a bcrypt comparison costs tens of
	// milliseconds on a Raspberry Pi.
	authCacheSize = 256
)

// authSlots bounds the bcrypt comparisons running at once in the whole
// process (every route, every reload), one per core the Go scheduler
// uses: a comparison is pure CPU (tens of milliseconds at cost 10 on a
// Raspberry Pi), and more at once than cores would only slow down every
// other request. An attempt that finds every slot busy is answered 503
// (temporary overload, RFC 9110 section 15.6.4) with Retry-After: 1 at
// once, as nginx's limit_req and limit_conn answer by default, rather than
// waiting in a queue that an attacker could make as long as it likes.
var authSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

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
	slots   chan struct{} // authSlots (a test's own)

	mu      sync.Mutex
	good    map[[sha256.Size]byte]struct{}    // credentials that passed
	fails   map[string]*authFails             // by client address
	flights map[[sha256.Size]byte]*authFlight // comparisons running, by credentials
}

type authFails struct {
	start    time.Time
	n        int // failed attempts in the window
	inflight int // attempts being compared
	logged   bool
}

// authFlight is a comparison running; requests with the same credentials
// wait for its answer.
type authFlight struct {
	done chan struct{} // closed when ok is set
	ok   bool
}

var (
	retryAfterWindow = []string{strconv.Itoa(int(authFailWindow / time.Second))}
	retryAfterSecond = []string{"1"}
)

func newBasicAuth(c *config.BasicAuth, log *slog.Logger) *basicAuth {
	a := &basicAuth{
		challenge: []string{`Basic realm="` + c.Realm + `", charset="UTF-8"`},
		users:     map[string][]byte{},
		log:       log,
		compare:   bcrypt.CompareHashAndPassword,
		slots:     authSlots,
		good:      map[[sha256.Size]byte]struct{}{},
		fails:     map[string]*authFails{},
		flights:   map[[sha256.Size]byte]*authFlight{},
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

// What begin decided for an attempt.
type authVerdict int

const (
	authCompare    authVerdict = iota // compare, then end
	authGood                          // remembered good credentials
	authWait                          // the same credentials are being compared
	authLocked                        // over the failure limit: 429, Retry-After 60
	authClientBusy                    // the client's comparison slot is taken: 429, Retry-After 1
	authBusy                          // every comparison slot is taken: 503, Retry-After 1
)

// check reports whether r carries valid credentials; if not, it has
// answered 401 (or 429 for a client over its failure limit or already
// comparing other credentials, or 503 while every comparison slot is
// busy).
func (a *basicAuth) check(w http.ResponseWriter, r *http.Request, trusted []netip.Prefix, field config.ClientIPHeader) bool {
	user, pass, ok := r.BasicAuth()
	if ok {
		client := failureKey(realip.Client(r.RemoteAddr, r.Header, trusted, field))
		key := sha256.Sum256([]byte(user + "\x00" + pass))
		if r.Context().Err() != nil {
			// The client is gone: compare nothing for it.
			a.refuse(w, r, authBusy)
			return false
		}
		v, fl := a.begin(client, key)
		switch v {
		case authGood:
			return true
		case authWait:
			select {
			case <-fl.done:
				if fl.ok {
					return true
				}
			case <-r.Context().Done():
				a.refuse(w, r, authBusy)
				return false
			}
		case authCompare:
			hash, known := a.users[user]
			if !known {
				hash = a.dummy
			}
			good := a.compare(hash, []byte(pass)) == nil && known
			a.end(client, user, key, fl, good)
			if good {
				return true
			}
		default:
			a.refuse(w, r, v)
			return false
		}
	}
	w.Header()["Www-Authenticate"] = a.challenge
	errpage.Write(w, r, http.StatusUnauthorized)
	return false
}

// refuse answers an attempt that is not compared.
func (a *basicAuth) refuse(w http.ResponseWriter, r *http.Request, v authVerdict) {
	switch v {
	case authLocked:
		w.Header()["Retry-After"] = retryAfterWindow
		errpage.Write(w, r, http.StatusTooManyRequests)
	case authClientBusy:
		w.Header()["Retry-After"] = retryAfterSecond
		errpage.Write(w, r, http.StatusTooManyRequests)
	default:
		w.Header()["Retry-After"] = retryAfterSecond
		errpage.Write(w, r, http.StatusServiceUnavailable)
	}
}

// begin decides what becomes of an attempt with credentials key from
// client. A client over its failure limit is refused whatever it sends,
// remembered good credentials too: were they let through, each guess
// would cost the client a cheap 429 instead of a bcrypt comparison and
// the right password would stand out as a 200. For authCompare it has
// taken a comparison slot and counted the attempt as in flight, and
// returns the flight that end completes; for authWait, the flight to wait
// for.
func (a *basicAuth) begin(client string, key [sha256.Size]byte) (authVerdict, *authFlight) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.fails[client]
	if f != nil && now.Sub(f.start) >= authFailWindow {
		f.start, f.n, f.logged = now, 0, false
	}
	if f != nil && f.n >= authMaxFailures {
		return authLocked, nil
	}
	if _, good := a.good[key]; good {
		return authGood, nil
	}
	if fl := a.flights[key]; fl != nil {
		return authWait, fl
	}
	if f != nil && (f.inflight >= authClientComparisons || f.n+f.inflight >= authMaxFailures) {
		return authClientBusy, nil
	}
	select {
	case a.slots <- struct{}{}:
	default:
		return authBusy, nil
	}
	if f == nil {
		if len(a.fails) >= authMaxClients {
			a.prune(now)
		}
		f = &authFails{start: now}
		a.fails[client] = f
	}
	f.inflight++
	fl := &authFlight{done: make(chan struct{})}
	a.flights[key] = fl
	return authCompare, fl
}

// end completes the comparison begin started: it frees the slot, answers
// the requests waiting for fl, remembers good credentials and counts and
// logs a failed attempt (in the same step as the attempt stops being in
// flight, so that no other attempt slips in between).
func (a *basicAuth) end(client, user string, key [sha256.Size]byte, fl *authFlight, good bool) {
	<-a.slots
	now := time.Now()
	a.mu.Lock()
	delete(a.flights, key)
	fl.ok = good
	close(fl.done)
	f := a.fails[client]
	if f != nil && f.inflight > 0 {
		f.inflight--
	}
	if good {
		if f != nil && f.n == 0 && f.inflight == 0 {
			delete(a.fails, client)
		}
		if len(a.good) >= authCacheSize {
			clear(a.good)
		}
		a.good[key] = struct{}{}
		a.mu.Unlock()
		return
	}
	switch {
	case f == nil: // pruned meanwhile
		if len(a.fails) >= authMaxClients {
			a.prune(now)
		}
		f = &authFails{start: now}
		a.fails[client] = f
	case now.Sub(f.start) >= authFailWindow:
		f.start, f.n, f.logged = now, 0, false
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

// prune drops expired windows of clients with no comparison running,
// then, if still full, every other entry.
func (a *basicAuth) prune(now time.Time) {
	for k, f := range a.fails {
		if f.inflight == 0 && now.Sub(f.start) >= authFailWindow {
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

package encoding

import (
	"bytes"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Reuse of coded bodies made per request.
//
// Coding is most of what a compressed response made per request costs
// Arka: zstd at level 1 was 45 to 50% of Arka's CPU on the 25 KB PHP page
// compressed for browsers (php-page-br, pprof of a whole run), more than
// its TLS and HTTP/1.1 together. Many such responses are the same bytes
// again and again (a page every anonymous visitor gets alike), and coding
// the same bytes at the same level gives the same result, so a response
// whose whole body is known before it is coded (it declared a
// Content-Length of at most reuseMaxBody bytes, and wrote them without a
// flush) is looked up by its bytes among the last coded ones, and on a
// match their coded form is sent as it is. The coded length is then known
// too, so such a response goes out with a Content-Length rather than
// chunked.
//
// What may be shared: only answers to requests without credentials
// (Cookie, Authorization) and that the response does not mark private or
// no-store (RFC 9111 section 5.2.2), the same rule a shared cache follows
// (RFC 9111 section 3.5); responses setting a cookie are not coded at all
// (BREACH, see Options.CompressCookies). A hit is quicker than a miss, and
// such a timing tells a client whether someone else got the same bytes
// lately: the rule keeps personal pages out of that.
//
// Bounds: reuseSlots entries of at most reuseMaxBody identity bytes each,
// with their coded form (about 4 MiB at the very most, less than one
// zstd encoder per two slots). An entry is stored only the second time
// its bytes are seen in its slot, so pages that differ on every request
// cost a hash and a comparison of 8 bytes, not an allocation.

const (
	reuseSlots   = 32
	reuseMaxBody = 64 << 10
)

// reuseCache maps a body's bytes, coding and level to its coded form.
// Safe for concurrent use; entries are immutable once stored.
type reuseCache struct {
	once  sync.Once
	seed  maphash.Seed
	slots [reuseSlots]atomic.Pointer[reuseEntry]
	// seen is the hash last seen (and not stored) in each slot.
	seen [reuseSlots]atomic.Uint64
}

type reuseEntry struct {
	sum    uint64
	coding Coding
	level  int
	ident  []byte
	coded  []byte
}

func (rc *reuseCache) hash(c Coding, level int, body []byte) uint64 {
	rc.once.Do(func() { rc.seed = maphash.MakeSeed() })
	// The coding and level are part of the key: mixed in after the bytes.
	return maphash.Bytes(rc.seed, body) ^ (uint64(c)<<56 | uint64(level)<<48)
}

// get returns the coded form of body, or nil.
func (rc *reuseCache) get(sum uint64, c Coding, level int, body []byte) []byte {
	e := rc.slots[sum%reuseSlots].Load()
	if e == nil || e.sum != sum || e.coding != c || e.level != level || !bytes.Equal(e.ident, body) {
		return nil
	}
	return e.coded
}

// put remembers coded as the coded form of body the second time in a row
// that body's hash comes to its slot. It copies both.
func (rc *reuseCache) put(sum uint64, c Coding, level int, body, coded []byte) {
	i := sum % reuseSlots
	if rc.seen[i].Swap(sum) != sum {
		return
	}
	rc.slots[i].Store(&reuseEntry{sum: sum, coding: c, level: level,
		ident: bytes.Clone(body), coded: bytes.Clone(coded)})
}

// mayReuse reports whether the answer to r may be served from, and stored
// into, the cache of coded bodies (see above): no credentials.
func mayReuse(r *http.Request) bool {
	return r.Method != http.MethodHead && len(r.Header["Cookie"]) == 0 && len(r.Header["Authorization"]) == 0
}

// privateResponse reports whether header fields h mark a response as
// not for sharing (RFC 9111 section 5.2.2.7 private, 5.2.2.5 no-store).
func privateResponse(h http.Header) bool {
	for _, l := range h["Cache-Control"] {
		for d := range strings.SplitSeq(l, ",") {
			name, _, _ := strings.Cut(d, "=") // private may name fields: private="Set-Cookie"
			name = strings.TrimSpace(name)
			if strings.EqualFold(name, "private") || strings.EqualFold(name, "no-store") {
				return true
			}
		}
	}
	return false
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

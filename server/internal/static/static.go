// Package static serves files from a directory: precompressed siblings and
// variants compressed once, conditional and range requests (RFC 9110
// sections 13 and 14), directory index files, safe path resolution, and
// sendfile for large bodies over plain HTTP.
//
// Serving is split in two, as the architecture asks: select (which file,
// which representation, which status, from the cached file description and
// the request's fields) and send (write the chosen bytes).
//
// # Where the time goes
//
// Serving the 1.3 KB page over HTTP/1.1 with TLS (arka under wrk, 64
// connections, CPU profile), this handler is 7 % of arka's CPU: the
// file cache lookup 2 %, setting the header fields 1 %, and sending
// 2.5 %, most of it the engine's copy of the body into its write buffer.
// Per request it allocates nothing (BenchmarkStaticSmall,
// BenchmarkStaticPrecompressed: 0 allocs/op): the field values of every
// representation (ETag, Last-Modified, Content-Length, Content-Type,
// Content-Encoding, Vary) are built once when the file is cached and set
// as the same []string each time, which also lets the HTTP/1.1 engine
// send the previous response's serialised fields again when they are the
// same strings (package h1: fieldMemo): the response head of a cached
// file is in effect computed once per connection. The rest of a request's
// cost is the engine's, the TLS record's and the kernel's (see package h1).
//
// Within the handler alone (BenchmarkStaticSmall here, 3,000,000 requests,
// CPU profile, December 2026): the cache lookup is about 37 % (otter's
// GetIfPresent: hashing the key's root and name 12 %, the hit counter of
// the status page 10 %, its read buffer the rest), the header map
// assignments of the fields above 22 %, the rest selecting and the
// precondition checks. Two costs were removed: the clock read that
// decided whether a stat is still trusted (6-7 %; the cache now ages
// entries by the request's start, which the dispatch reads anyway:
// monotime.Stamped), and parsing Accept-Encoding (17 % of
// BenchmarkStaticPrecompressed; package encoding memoizes repeated values).
// What is left is the map's and the cache's own work; a per-route front
// cache without a policy would save part of the lookup, at the price of a
// second, unbounded index of the files.
//
// # Compression levels
//
// A file without precompressed siblings is compressed on the fly, once,
// and the variant cached; below BackgroundCompressMin (256 KiB) its first
// request waits for that. BenchmarkOnTheFlyLevels, 200 KB of HTML (the Go
// specification), on this project's development machine (2 cores shared
// with other jobs, load 7; the fastest of three runs of 20, December
// 2026), time and size:
//
//	brotli  4:   8.6 ms  55,453 B      gzip 1:   2.4 ms  67,051 B
//	brotli  5:   7.7 ms  51,630 B      gzip 6:   4.5 ms  56,478 B
//	brotli  6:  15.7 ms  50,854 B      gzip 9:  11.8 ms  53,756 B
//	brotli  7:  20.6 ms  50,263 B
//	brotli  9:  47.7 ms  49,701 B
//	brotli 11: 593   ms  45,186 B
//
// Brotli 11 was the level until December 2026: one-time per file, but paid
// by the request that waits (seconds on a Pi Zero 2 W), and a client
// asking for 32 distinct files cost 22 s of CPU, a cheap way to load the
// board. The defaults are now brotli 5 and gzip 6
// (config.DefaultStaticBrotliLevel, DefaultStaticGzipLevel): about 10 ms
// for such a page here, 14 % larger than brotli 11 (brotli 6, nginx's
// brotli module's default, costs twice 5 for 1.5 % less). The best sizes
// are for files compressed ahead of time: .br, .gz and .zst siblings are
// served as they are, whatever their level. Raising a cached variant to
// brotli 11 in the background was left out: the bytes, so the ETag, would
// change under clients that have the first one, for 12 % of one file.
// While the board is hot (Options.Constrained) no brotli is made and gzip
// at level 1. Each level's variant has its own ETag (variantETag).
package static

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/encoding"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/lograte"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Options are what a static handler receives from the server.
type Options struct {
	Cache *Cache // shared by all static routes; required

	// Compress enables variants compressed on the fly for files without
	// precompressed siblings, for responses of at least MinSize bytes.
	Compress bool
	MinSize  int64
	// BrotliLevel and GzipLevel are used for those variants (defaults
	// config.DefaultStaticBrotliLevel and DefaultStaticGzipLevel).
	BrotliLevel, GzipLevel int
	// MaxCompress is the largest file, in bytes, compressed on the fly.
	// Default 4 MiB.
	MaxCompress int64
	// Constrained, when it returns true (the board is hot), stops new
	// brotli compression; gzip is made at level 1 instead.
	Constrained func() bool
	// Logger receives the error log: a line for each path Arka may not
	// read (EACCES, EPERM: the file, its index file, a directory on its
	// path or a precompressed sibling), naming the path and the errno
	// text. A path's line is written at most once per deniedLogEvery, and
	// all lines go through package lograte's budget. Nil discards them.
	Logger *slog.Logger
}

// Handler serves one static route.
type Handler struct {
	root     *os.Root
	rootPath string
	o        Options
	index    []string
	dotfiles bool
	siblings bool
	fallback string
	browse   bool // list directories without an index file
	cacheCtl []string
	extra    []headerField
	elog     *lograte.Log
}

type headerField struct {
	name    string
	value   []string
	caching bool // a caching field: sent only with 2xx and 304 (see setCaching)
}

// setCaching adds the route's caching fields (cache_control, and caching
// fields among its headers) to a successful or 304 response. Error
// responses never get them (errpage sends Cache-Control: no-store): a
// shared cache must not keep a 412 or 416 for max-age seconds.
func (h *Handler) setCaching(hd http.Header) {
	if h.cacheCtl != nil {
		hd["Cache-Control"] = h.cacheCtl
	}
	for _, f := range h.extra {
		if f.caching {
			hd[f.name] = f.value
		}
	}
}

// New opens cfg.Root and returns a handler. The root stays open until
// Close; files are resolved inside it with os.Root, so neither ".." nor a
// symbolic link can reach a file outside it.
func New(cfg *config.Static, o Options) (*Handler, error) {
	if o.Cache == nil {
		return nil, errors.New("static: no cache")
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", cfg.Root, err)
	}
	if o.BrotliLevel == 0 {
		o.BrotliLevel = config.DefaultStaticBrotliLevel
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = config.DefaultStaticGzipLevel
	}
	if o.MaxCompress == 0 {
		o.MaxCompress = 4 << 20
	}
	h := &Handler{
		root: root, rootPath: cfg.Root, o: o,
		index:    cfg.Index,
		dotfiles: cfg.AllowDotfiles,
		siblings: cfg.PrecompressedEnabled(),
		fallback: strings.TrimPrefix(cfg.Fallback, "/"),
		browse:   cfg.Browse,
		elog:     lograte.New(o.Logger),
	}
	if cfg.CacheControl != "" {
		h.cacheCtl = []string{cfg.CacheControl}
	}
	for k, v := range cfg.Headers {
		k = http.CanonicalHeaderKey(k)
		h.extra = append(h.extra, headerField{k, []string{v}, wire.CachingField(k)})
	}
	return h, nil
}

// Close releases the root directory.
func (h *Handler) Close() error { return h.root.Close() }

var (
	missing       = &entry{kind: kMissing}
	allowGetHead  = []string{Methods}
	acceptRanges  = []string{"bytes"}
	varyAE        = []string{"Accept-Encoding"}
	codingHeaders = [encoding.NumCodings][]string{nil, {"zstd"}, {"br"}, {"gzip"}}
)

// Methods are the methods a static route answers, the value of the Allow
// field (RFC 9110 section 10.2.1) of its 405 and of its answer to OPTIONS.
const Methods = "GET, HEAD, OPTIONS"

// ServeHTTP serves GET and HEAD. r.URL.Path must already be normalized by
// the server (decoded, dot-segments removed, starting with "/").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = allowGetHead
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		errpage.Write(w, r, http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if len(p) == 0 || p[0] != '/' {
		errpage.Write(w, r, http.StatusBadRequest)
		return
	}
	if !h.dotfiles && wire.HasDotSegment(p) {
		errpage.Write(w, r, http.StatusNotFound)
		return
	}
	name := p[1:]
	if name == "" {
		name = "."
	}
	e := missing
	if !wire.HasEncodedSlash(r.URL) {
		// An encoded slash (%2F) is data inside a path segment, never a
		// directory separator, and no file name holds a slash: such a
		// path names no file (404, or the fallback), as Apache's
		// AllowEncodedSlashes Off answers.
		e = h.o.Cache.lookup(h.root, fileKey{h.rootPath, name}, h.siblings, h.index, monotime.Start(w))
	}
	switch e.kind {
	case kFile:
		if strings.HasSuffix(p, "/") {
			break // "file/" is not the file
		}
		h.serve(w, r, name, e)
		return
	case kDenied:
		h.forbidden(w, r, e)
		return
	case kDir:
		if !strings.HasSuffix(p, "/") {
			redirectSlash(w, r, p)
			return
		}
		for _, in := range e.index {
			ie := h.o.Cache.lookup(h.root, fileKey{h.rootPath, in}, h.siblings, nil, monotime.Start(w))
			switch ie.kind {
			case kFile:
				h.serve(w, r, in, ie)
				return
			case kDenied:
				// As nginx: an index file that cannot be read is a 403,
				// not a reason to try the next one.
				h.forbidden(w, r, ie)
				return
			}
		}
		if h.browse {
			h.listing(w, r, name, p)
			return
		}
		if h.fallback == "" {
			// Like nginx and Apache: the directory exists, listing it is
			// not allowed.
			errpage.Write(w, r, http.StatusForbidden)
			return
		}
	}
	if h.fallback != "" {
		fe := h.o.Cache.lookup(h.root, fileKey{h.rootPath, h.fallback}, h.siblings, nil, monotime.Start(w))
		switch fe.kind {
		case kFile:
			h.serve(w, r, h.fallback, fe)
			return
		case kDenied:
			h.forbidden(w, r, fe)
			return
		}
	}
	errpage.Write(w, r, http.StatusNotFound)
}

// deniedLogEvery is how often a path Arka may not read is logged again
// while it stays so and is asked for.
const deniedLogEvery = time.Minute

// forbidden answers 403 for a path Arka may not read (RFC 9110 section
// 15.5.4), as nginx does, and logs why: a permission mistake must not
// look like a missing file (404) to the person who made it.
func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request, e *entry) {
	for _, d := range e.denied {
		h.logDenied(d, monotime.Start(w))
	}
	errpage.Write(w, r, http.StatusForbidden)
}

// logDenied writes d's error-log line unless it was written less than
// deniedLogEvery before now (monotime units).
func (h *Handler) logDenied(d *denial, now int64) {
	last := d.logged.Load()
	if last != 0 && now-last < int64(deniedLogEvery) || !d.logged.CompareAndSwap(last, now) {
		return
	}
	msg := "static: " + d.op + " failed: " + d.cause
	if d.sibling {
		msg += " (precompressed sibling passed over)"
	}
	h.elog.Write(slog.LevelError, msg, "path", filepath.Join(h.rootPath, d.name), "uid", os.Geteuid(),
		"hint", "Arka's user needs read permission on the file, and read and search (r, x) on each directory above it")
}

// redirectSlash answers 301 to the directory's slash form, keeping the
// query. The location is built from the normalized path, so it is always a
// local path (never "//host").
func redirectSlash(w http.ResponseWriter, r *http.Request, p string) {
	loc := (&urlPath{p + "/"}).escaped()
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	errpage.Write(w, r, http.StatusMovedPermanently)
}

// serve selects the representation, evaluates preconditions and ranges,
// and sends.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name string, e *entry) {
	for _, d := range e.denied {
		h.logDenied(d, monotime.Start(w)) // precompressed siblings passed over
	}
	id := e.reps[encoding.Identity]
	a := encoding.ParseAccept(r.Header["Accept-Encoding"])
	sizes := e.sizes
	vary := e.alternates
	if !e.alternates && e.compressible && h.o.Compress && id.id.size >= h.o.MinSize && id.id.size <= h.o.MaxCompress {
		// No siblings: offer variants compressed once and cached. Their
		// sizes are not known before compressing; rank brotli before gzip
		// before identity.
		vary = true
		if !(h.o.Constrained != nil && h.o.Constrained()) {
			sizes[encoding.Brotli] = id.id.size / 4
		}
		sizes[encoding.Gzip] = id.id.size / 3
	}
	cd, _ := a.ChooseStatic(&sizes)
	rp := e.reps[cd]
	if rp == nil && cd != encoding.Identity {
		level := h.o.BrotliLevel
		if cd == encoding.Gzip {
			level = h.o.GzipLevel
			if h.o.Constrained != nil && h.o.Constrained() {
				// Hot: the normal level's variant if it is made already,
				// else level 1 (its own ETag and cache entry).
				if rp = h.o.Cache.cachedVariant(fileKey{h.rootPath, name}, id, cd, level); rp == nil {
					level = 1
				}
			}
		}
		if rp == nil {
			rp = h.o.Cache.variant(h.root, fileKey{h.rootPath, name}, id, cd, level, h.o.MaxCompress)
		}
		if rp == nil && cd == encoding.Brotli && a.Acceptable(encoding.Gzip) {
			rp = h.o.Cache.variant(h.root, fileKey{h.rootPath, name}, id, encoding.Gzip, h.o.GzipLevel, h.o.MaxCompress)
		}
		if rp == nil {
			rp = id
		}
	}
	if rp == nil {
		rp = id
	}

	// A variant made on the fly was modified when its file was: it has
	// the file's Last-Modified (which newRep may have set to the time
	// first seen, and later to the file's).
	tm := rp
	if rp.name == "" {
		tm = id
	}
	hd := w.Header()
	hd["Etag"] = rp.etagH
	hd["Last-Modified"] = tm.lastModH
	if vary {
		hd["Vary"] = varyAE
	}
	for _, f := range h.extra {
		if !f.caching {
			hd[f.name] = f.value
		}
	}

	switch evalPreconditions(r, rp.etag, tm.modTime) {
	case notModified:
		h.setCaching(hd)
		w.WriteHeader(http.StatusNotModified)
		return
	case failedPrecond:
		errpage.Write(w, r, http.StatusPreconditionFailed)
		return
	}
	hd["Content-Type"] = e.ctype
	if rp.coding != encoding.Identity {
		hd["Content-Encoding"] = codingHeaders[rp.coding]
	}
	hd["Accept-Ranges"] = acceptRanges
	size := rp.id.size

	// Range is one field value (RFC 9110 section 14.2): several lines are
	// no valid Range, and ignored like one that does not parse.
	if rh := r.Header["Range"]; len(rh) == 1 && r.Method == http.MethodGet && ifRangeAllows(r, rp.etag, tm.modTime) {
		var buf [4]byteRange
		ranges, err := parseRange(rh[0], size, buf[:0])
		switch {
		case err == errUnsatisfiable:
			hd["Content-Range"] = []string{"bytes */" + strconv.FormatInt(size, 10)}
			errpage.Write(w, r, http.StatusRequestedRangeNotSatisfiable)
			return
		case err == nil && len(ranges) == 1:
			h.setCaching(hd)
			rg := ranges[0]
			hd["Content-Range"] = []string{string(contentRange(nil, rg, size))}
			hd["Content-Length"] = []string{strconv.FormatInt(rg.length(), 10)}
			w.WriteHeader(http.StatusPartialContent)
			h.send(w, r, rp, rg.Start, rg.length())
			return
		case err == nil && rp.coding == encoding.Identity:
			h.setCaching(hd)
			h.sendMultipart(w, r, rp, e.ctype[0], ranges)
			return
		}
		// Several ranges of an encoded representation: the whole of it,
		// 200. RFC 9110 section 8.4 makes Content-Encoding describe the
		// content of the message, which for multipart/byteranges is the
		// multipart body, not its parts; encoded parts would need a coding
		// label per part, which no client decodes, and a slice of a
		// gzip/br/zstd stream is useless alone. Section 14.2 lets a
		// server ignore Range, and the full representation keeps the
		// ETag and caches consistent with every other response.
	}
	h.setCaching(hd)
	hd["Content-Length"] = rp.clH
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		h.send(w, r, rp, 0, size)
	}
}

// send writes n bytes of rp from offset off: from memory when held there,
// else from the file (sendfile on plain HTTP/1.1 via the writer's
// ReadFrom). A client that stops reading is the engine's business, as for
// every handler: the HTTP/1.1 engine drops it after Limits.Write without
// progress (nginx's send_timeout), the HTTP/2 engine resets the stream
// and closes a connection on which nothing moves.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, rp *rep, off, n int64) {
	if r.Method == http.MethodHead || n == 0 {
		return
	}
	if rp.body != nil {
		w.Write(rp.body[off : off+n])
		return
	}
	f := h.open(rp)
	if f == nil {
		return // headers are out: the client sees a short body and closes
	}
	defer f.Close()
	h.copyRange(w, f, off, n)
}

// open opens rp's file for sending, checking that it is still the version
// described. Replaced since, the length promised may be wrong: the entry
// is forgotten and the response cut short (the client retries and gets
// the new version).
func (h *Handler) open(rp *rep) *os.File {
	f, err := h.root.Open(rp.name)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || idOf(fi) != rp.id {
		f.Close()
		h.o.Cache.invalidate(fileKey{h.rootPath, strings.TrimSuffix(rp.name, rp.coding.Ext())})
		panic(http.ErrAbortHandler)
	}
	return f
}

// copyRange sends n bytes of f from offset off. It reports false when
// the response could not be completed.
func (h *Handler) copyRange(w http.ResponseWriter, f *os.File, off, n int64) bool {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false
	}
	_, err := io.CopyN(w, f, n)
	return err == nil
}

// sendMultipart answers several ranges as multipart/byteranges (RFC 9110
// section 14.6), with the total length computed up front.
func (h *Handler) sendMultipart(w http.ResponseWriter, r *http.Request, rp *rep, ctype string, ranges []byteRange) {
	var bb [12]byte
	rand.Read(bb[:])
	boundary := hex.EncodeToString(bb[:])
	size := rp.id.size
	heads := make([]string, len(ranges))
	var total int64
	for i, rg := range ranges {
		var b []byte
		b = append(b, "\r\n--"...)
		b = append(b, boundary...)
		b = append(b, "\r\nContent-Type: "...)
		b = append(b, ctype...)
		b = append(b, "\r\nContent-Range: "...)
		b = contentRange(b, rg, size)
		b = append(b, "\r\n\r\n"...)
		heads[i] = string(b)
		total += int64(len(b)) + rg.length()
	}
	tail := "\r\n--" + boundary + "--\r\n"
	total += int64(len(tail))
	hd := w.Header()
	hd["Content-Type"] = []string{"multipart/byteranges; boundary=" + boundary}
	hd["Content-Length"] = []string{strconv.FormatInt(total, 10)}
	w.WriteHeader(http.StatusPartialContent)
	if r.Method == http.MethodHead {
		return
	}
	// A part that cannot be sent cuts the response: the parts after it
	// would no longer be where the multipart framing says. The file is
	// opened for each part's bytes alone (at most maxRanges opens, each
	// checked to be the version described), after the part's head is
	// sent: the HTTP/2 engine gives a file back while its stream waits
	// for flow-control window (package h2, copyParked), but a head that
	// waited for window with the file open would hold it meanwhile.
	for i, rg := range ranges {
		io.WriteString(w, heads[i])
		if rp.body != nil {
			w.Write(rp.body[rg.Start:rg.End])
			continue
		}
		if fl, ok := w.(http.Flusher); ok && i == 0 {
			fl.Flush() // the response's head and the first part's, held until now
		}
		f := h.open(rp)
		if f == nil {
			panic(http.ErrAbortHandler)
		}
		ok := h.copyRange(w, f, rg.Start, rg.length())
		f.Close()
		if !ok {
			panic(http.ErrAbortHandler)
		}
	}
	io.WriteString(w, tail)
}

type urlPath struct{ p string }

// escaped percent-encodes a path for a Location field: everything but
// unreserved characters, sub-delims, ":", "@" and "/" (RFC 3986 section 3.3).
func (u *urlPath) escaped() string {
	const hexd = "0123456789ABCDEF"
	needs := false
	for i := 0; i < len(u.p); i++ {
		if !pathSafe(u.p[i]) {
			needs = true
			break
		}
	}
	if !needs {
		return u.p
	}
	b := make([]byte, 0, len(u.p)+16)
	for i := 0; i < len(u.p); i++ {
		c := u.p[i]
		if pathSafe(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexd[c>>4], hexd[c&15])
		}
	}
	return string(b)
}

func pathSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

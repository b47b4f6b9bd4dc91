package static

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/arkaweb/arka/server/internal/encoding"
	"github.com/arkaweb/arka/server/internal/wire"
	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"
)

// CacheOptions bound the caches shared by every static route of a server.
// Zero fields take the defaults named.
type CacheOptions struct {
	// FileBytes is the open-file cache budget in bytes: metadata of files
	// (found or not) and the bodies of small files. Default 32 MiB.
	FileBytes int64
	// VariantBytes is the budget in bytes for compressed variants made on
	// the fly of files without precompressed siblings. Default 32 MiB.
	VariantBytes int64
	// Valid is how long a stat result is trusted before the file is looked
	// at again, like nginx's open_file_cache_valid. Default DefaultValid.
	Valid time.Duration
	// MaxInMemory: files (and siblings) up to this many bytes are held in
	// memory; larger ones are read from disk (sendfile over plain HTTP).
	// Default 256 KiB.
	MaxInMemory int64
}

// Cache is the open-file cache and the compressed-variant cache. Both are
// byte-weighted (maypok86/otter, W-TinyLFU) and never exceed their budgets.
// Safe for concurrent use.
type Cache struct {
	o        CacheOptions
	files    *otter.Cache[fileKey, *entry]
	variants *otter.Cache[variantKey, *rep]
	fstats   *stats.Counter
	vstats   *stats.Counter

	bg bgCompressor // large files are compressed off the request path
}

// CacheStats are the caches' figures for the status page.
type CacheStats struct {
	FileEntries, VariantEntries int
	FileBytes, VariantBytes     uint64 // in use
	FileBudget, VariantBudget   uint64
	FileHits, FileMisses        uint64
	VariantHits, VariantMisses  uint64
}

type fileKey struct{ root, name string }

type variantKey struct {
	root, name         string
	size, mtime, ctime int64
	ino                uint64
	coding             encoding.Coding
	level              int8 // the coding's level: other bytes, another ETag
}

// entryOverhead approximates the bytes an entry costs beyond names and
// bodies (structs, header slices, cache node).
const entryOverhead = 512

// NewCache returns caches bounded as o says.
func NewCache(o CacheOptions) *Cache {
	if o.FileBytes <= 0 {
		o.FileBytes = 32 << 20
	}
	if o.VariantBytes <= 0 {
		o.VariantBytes = 32 << 20
	}
	if o.Valid <= 0 {
		o.Valid = DefaultValid
	}
	if o.MaxInMemory <= 0 {
		o.MaxInMemory = 256 << 10
	}
	c := &Cache{o: o, fstats: stats.NewCounter(), vstats: stats.NewCounter()}
	c.files = otter.Must(&otter.Options[fileKey, *entry]{
		MaximumWeight: uint64(o.FileBytes),
		Weigher:       func(k fileKey, e *entry) uint32 { return e.weight },
		StatsRecorder: c.fstats,
	})
	c.variants = otter.Must(&otter.Options[variantKey, *rep]{
		MaximumWeight: uint64(o.VariantBytes),
		Weigher: func(k variantKey, r *rep) uint32 {
			return uint32(len(r.body) + len(k.name) + entryOverhead)
		},
		StatsRecorder: c.vstats,
	})
	return c
}

// Stats returns current figures.
func (c *Cache) Stats() CacheStats {
	fs, vs := c.fstats.Snapshot(), c.vstats.Snapshot()
	return CacheStats{
		FileEntries: c.files.EstimatedSize(), VariantEntries: c.variants.EstimatedSize(),
		FileBytes: c.files.WeightedSize(), VariantBytes: c.variants.WeightedSize(),
		FileBudget: uint64(c.o.FileBytes), VariantBudget: uint64(c.o.VariantBytes),
		FileHits: fs.Hits, FileMisses: fs.Misses, VariantHits: vs.Hits, VariantMisses: vs.Misses,
	}
}

// Close stops the caches' background work.
func (c *Cache) Close() {
	c.files.StopAllGoroutines()
	c.variants.StopAllGoroutines()
	c.bg.stop()
}

type kind uint8

const (
	kMissing kind = iota // no such file, or not reachable inside root
	kFile                // regular file
	kDir                 // directory
	kOther               // device, socket, fifo: never served
	kDenied              // Arka may not read it or a directory on its path: 403, logged
)

// denial is a permission error (EACCES, EPERM) met while describing a
// path: the file itself (a kDenied entry) or a precompressed sibling,
// passed over (a kFile entry). Kept across rebuilds of the entry while
// the path stays denied, so that its error-log line is written once per
// deniedLogEvery, not once per request (Handler.logDenied).
type denial struct {
	name    string // under root
	op      string // the call that failed: "stat" or "open"
	sibling bool   // a precompressed sibling, passed over
	cause   string // the errno text, "permission denied"
	logged  atomic.Int64
}

// denied reports whether err is a permission error (EACCES or EPERM), as
// opposed to a missing file (ENOENT, ENOTDIR) or any other failure.
func denied(err error) bool { return errors.Is(err, fs.ErrPermission) }

// newDenial describes err, met by op on name; old's denial of the same
// name is kept (with when it was logged) if it has one.
func newDenial(name, op string, err error, old *entry) *denial {
	if old != nil {
		for _, d := range old.denied {
			if d.name == name {
				return d
			}
		}
	}
	cause := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		cause = errno.Error()
	}
	return &denial{name: name, op: op, cause: cause}
}

func newSiblingDenial(name, op string, err error, old *entry) *denial {
	d := newDenial(name, op, err, old)
	d.sibling = true
	return d
}

// sameDenials reports whether a and b hold the same denials (newDenial
// reuses them, so the same pointers in the same order).
func sameDenials(a, b []*denial) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fileID identifies one version of a file. The change time tells apart
// a file rewritten in place with its size and mtime restored (cp -p, a
// restore from backup), which size, mtime and inode alone do not.
type fileID struct {
	size, mtime, ctime int64 // bytes; Unix nanoseconds
	ino, dev           uint64
}

func idOf(fi fs.FileInfo) fileID {
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino, id.dev, id.ctime = st.Ino, uint64(st.Dev), ctimeOf(st)
	}
	return id
}

// entry is what the cache knows of one path under a root.
type entry struct {
	kind    kind
	id      fileID
	checked atomic.Int64 // monotime.Now() of the last stat (at most)
	busy    atomic.Bool  // a request is revalidating it

	ctype        []string // Content-Type field value
	compressible bool
	reps         [encoding.NumCodings]*rep // identity and precompressed siblings
	sizes        [encoding.NumCodings]int64
	alternates   bool     // more than identity may be sent: Vary: Accept-Encoding
	index        []string // for directories: candidate index paths
	weight       uint32

	// denied is, for kDenied, why; for kFile, the precompressed
	// siblings passed over because Arka may not read them.
	denied []*denial
}

// rep is one representation: the file itself, a precompressed sibling, or
// a variant compressed on the fly. Header values are computed once.
type rep struct {
	coding   encoding.Coding
	name     string // file under root; "" for variants made on the fly
	id       fileID
	modTime  time.Time // Last-Modified: the file's, or when first seen if that is later (clamped)
	clamped  bool
	etag     string
	etagH    []string
	lastModH []string
	clH      []string
	body     []byte // the whole representation, when held in memory
}

// newRep describes one representation at now (wire.DateUnix: the Date
// second). A modification time later than now (a board without a
// real-time clock, before NTP has set it) is replaced by now (RFC 9110
// section 8.8.2.1: no Last-Modified later than Date). That is the Date of
// the first response that describes this version, not of each one: a
// Last-Modified that moved with every response would make every
// If-Modified-Since look modified and every If-Unmodified-Since fail,
// while the file has not changed. The cache looks at the file again once
// Valid has passed and, once the clock has passed the file's time, sends
// the real one (loadRep).
func newRep(c encoding.Coding, name string, id fileID, body []byte, etag string, now int64) *rep {
	mod := time.Unix(0, id.mtime)
	clamped := future(id, now)
	if clamped {
		mod = time.Unix(now, 0)
	}
	r := &rep{coding: c, name: name, id: id, modTime: mod, clamped: clamped, body: body, etag: etag}
	r.etagH = []string{etag}
	r.lastModH = []string{mod.UTC().Format(http1123)}
	r.clH = []string{strconv.FormatInt(id.size, 10)}
	return r
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// future reports whether id's modification time, in the whole seconds
// Last-Modified has, is later than now (Unix seconds).
func future(id fileID, now int64) bool {
	return time.Unix(0, id.mtime).Unix() > now
}

// makeETag returns a strong entity tag from modification time and size, as
// nginx and Caddy do, with the coding appended for non-identity
// representations so that every representation has its own (RFC 9110
// section 8.8.3). The time is in nanoseconds, as Linux keeps it (nginx
// uses seconds), so a same-size rewrite gets a new tag unless the file
// system gave it the very same timestamp: Linux stamps writes with a
// clock that moves once a scheduler tick (1 to 10 ms; finer on 6.13+
// kernels when the time is looked at), so two same-size versions written
// within one tick share a tag. Content hashes would close that gap at
// the cost of reading every file whole before its first byte is sent.
func makeETag(id fileID, c encoding.Coding) string {
	b := make([]byte, 0, 40)
	b = append(b, '"')
	b = strconv.AppendInt(b, id.mtime, 16) // nanoseconds
	b = append(b, '-')
	b = strconv.AppendInt(b, id.size, 16)
	if c != encoding.Identity {
		b = append(b, '-')
		b = append(b, c.Token()...)
	}
	b = append(b, '"')
	return string(b)
}

// variantETag is the entity tag of file id compressed on the fly with
// coding c at level: makeETag's with the level appended ("...-gzip9"),
// because another level gives other bytes and a strong validator must
// change when the bytes do (RFC 9110 sections 8.8.1, 8.8.3): else If-Range
// would splice two gzip streams made at different levels (one while the
// board was hot, one after an eviction or a restart). A precompressed
// sibling's tag has no level: it is made from the sibling's own time and
// size.
func variantETag(id fileID, c encoding.Coding, level int) string {
	e := makeETag(id, c)
	return e[:len(e)-1] + strconv.Itoa(level) + `"`
}

// DefaultValid is how long the file cache trusts a stat result by default:
// a file replaced on disk is served new at most this long after.
const DefaultValid = time.Second

// lookup returns the entry for name under root, from the cache when it was
// checked less than Valid ago. now is the request's start in monotime
// units (monotime.Start: the dispatch's clock reading, not a new one); an
// entry's checked time is therefore at most the time of its stat, which
// errs on the side of looking again. One request at a time revalidates a
// stale entry; the others keep using it meanwhile.
func (c *Cache) lookup(root *os.Root, key fileKey, siblings bool, index []string, now int64) *entry {
	if e, ok := c.files.GetIfPresent(key); ok {
		if now-e.checked.Load() < int64(c.o.Valid) || !e.busy.CompareAndSwap(false, true) {
			return e
		}
		n := c.build(root, key, siblings, index, e)
		if n == e {
			e.checked.Store(now)
			e.busy.Store(false)
			return e
		}
		n.checked.Store(now)
		c.files.Set(key, n)
		c.dropVariants(key, e, n)
		return n
	}
	e := c.build(root, key, siblings, index, nil)
	e.checked.Store(now)
	c.files.Set(key, e)
	return e
}

// build stats (and for small files reads) name and its siblings. If old
// describes the same versions, old is returned.
func (c *Cache) build(root *os.Root, key fileKey, siblings bool, index []string, old *entry) *entry {
	name := key.name
	now := wire.DateUnix()
	fi, err := root.Stat(name)
	e := &entry{weight: uint32(len(key.name)*2 + len(key.root) + entryOverhead)}
	for i := range e.sizes {
		e.sizes[i] = -1
	}
	switch {
	case err != nil && denied(err):
		if old != nil && old.kind == kDenied {
			return old
		}
		e.kind = kDenied
		e.denied = []*denial{newDenial(name, "stat", err, old)}
		return e
	case err != nil:
		e.kind = kMissing
		if old != nil && old.kind == kMissing {
			return old
		}
		return e
	case fi.IsDir():
		e.kind = kDir
		e.id = idOf(fi)
		if old != nil && old.kind == kDir {
			return old
		}
		e.index = make([]string, len(index))
		for i, n := range index {
			if name == "." {
				e.index[i] = n
			} else {
				e.index[i] = name + n
			}
		}
		return e
	case !fi.Mode().IsRegular():
		e.kind = kOther
		return e
	}
	e.kind = kFile
	e.id = idOf(fi)
	ct := ContentType(name)
	e.ctype = []string{ct}
	e.compressible = encoding.Compressible(ct)
	var oldReps [encoding.NumCodings]*rep
	if old != nil && old.kind == kFile {
		oldReps = old.reps
	}
	same := old != nil && old.kind == kFile
	r, err := c.loadRep(root, encoding.Identity, name, fi, oldReps[encoding.Identity], now)
	switch {
	case r != nil:
		e.reps[encoding.Identity] = r
		same = same && r == oldReps[encoding.Identity]
	case denied(err):
		if old != nil && old.kind == kDenied {
			return old
		}
		e.kind = kDenied
		e.denied = []*denial{newDenial(name, "open", err, old)}
		return e
	default:
		e.kind = kMissing
		return e
	}
	if siblings {
		for cd := encoding.Zstd; cd < encoding.NumCodings; cd++ {
			sn := name + cd.Ext()
			if o := oldReps[cd]; o != nil {
				sn = o.name // reuse the string
			}
			sfi, err := root.Stat(sn)
			if err != nil || !sfi.Mode().IsRegular() || sfi.Size() == 0 || !siblingFresh(sfi, fi) {
				if denied(err) {
					e.denied = append(e.denied, newSiblingDenial(sn, "stat", err, old))
				}
				same = same && oldReps[cd] == nil
				continue
			}
			// A sibling Arka may not read is passed over (logged): the
			// file itself, or another sibling, is served.
			r, err := c.loadRep(root, cd, sn, sfi, oldReps[cd], now)
			if r == nil && denied(err) {
				e.denied = append(e.denied, newSiblingDenial(sn, "open", err, old))
			}
			e.reps[cd] = r
			same = same && r == oldReps[cd]
			if r != nil {
				e.alternates = true
			}
		}
	}
	if same && sameDenials(e.denied, old.denied) {
		return old
	}
	for cd, r := range e.reps {
		if r != nil {
			e.sizes[cd] = r.id.size
			e.weight += uint32(len(r.body) + len(r.name))
		}
	}
	return e
}

// siblingFresh reports whether a precompressed sibling may stand for its
// file: only when it was modified at the same time as the file or later.
// A sibling older than its file (app.js edited, last month's app.js.gz left
// beside it) holds old content and is ignored; gzip -k, brotli and zstd
// give the sibling the file's own modification time, which counts as fresh.
func siblingFresh(sibling, file fs.FileInfo) bool {
	return !sibling.ModTime().Before(file.ModTime())
}

// loadRep describes one file at now (newRep), reading it into memory when
// small. It reuses old when the file is unchanged and its time is as much
// in the future as it was (a Last-Modified replaced by the time first
// seen stays, so that it keeps validating); else it makes a new one,
// with old's bytes when only that changed. A new or changed file is
// opened whatever its size, so that one Arka may not read (chmod changes
// the change time, so the id) is known before a response's head
// promises its bytes; the error is open's or read's, nil with a nil rep
// when the file is not a regular one.
func (c *Cache) loadRep(root *os.Root, cd encoding.Coding, name string, fi fs.FileInfo, old *rep, now int64) (*rep, error) {
	id := idOf(fi)
	if old != nil && old.id == id {
		if old.clamped == future(id, now) {
			return old, nil
		}
		return newRep(cd, old.name, id, old.body, old.etag, now), nil
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil || !ffi.Mode().IsRegular() {
		return nil, err
	}
	id = idOf(ffi)
	if id.size > c.o.MaxInMemory {
		return newRep(cd, name, id, nil, makeETag(id, cd), now), nil
	}
	body := make([]byte, id.size)
	if _, err := io.ReadFull(f, body); err != nil {
		return nil, err // changed under us; the next look will see it
	}
	return newRep(cd, name, id, body, makeETag(id, cd), now), nil
}

func varKey(key fileKey, id fileID, cd encoding.Coding, level int) variantKey {
	return variantKey{root: key.root, name: key.name, size: id.size, mtime: id.mtime, ctime: id.ctime, ino: id.ino, coding: cd, level: int8(level)}
}

// cachedVariant returns identity compressed with coding cd at level when
// the variant cache holds it (and it is smaller than identity), else nil;
// it never compresses.
func (c *Cache) cachedVariant(key fileKey, id *rep, cd encoding.Coding, level int) *rep {
	if v, ok := c.variants.GetIfPresent(varKey(key, id.id, cd, level)); ok && v.body != nil {
		return v
	}
	return nil
}

// variant returns identity compressed with coding cd at level, compressing
// it once (concurrent callers wait for the same work) and caching it within
// the variant budget. It returns nil if the file cannot be read or the
// result is not smaller. Variants are cached per level, as their ETags
// differ per level (variantETag).
func (c *Cache) variant(root *os.Root, key fileKey, id *rep, cd encoding.Coding, level int, maxSize int64) *rep {
	vk := varKey(key, id.id, cd, level)
	if v, ok := c.variants.GetIfPresent(vk); ok {
		return v
	}
	if id.id.size > maxSize {
		return nil
	}
	if id.id.size >= BackgroundCompressMin {
		// Too slow for a request to wait on (a 4 MiB page takes seconds
		// of brotli on a Pi): compressed in the background, and this
		// request gets what exists (a sibling, another coding, identity).
		c.bg.schedule(vk, func() {
			if r, err := compressRep(root, id, cd, level); err == nil {
				c.variants.Set(vk, r)
			}
		})
		return nil
	}
	v, err := c.variants.Get(context.Background(), vk, otter.LoaderFunc[variantKey, *rep](
		func(ctx context.Context, vk variantKey) (*rep, error) {
			return compressRep(root, id, cd, level)
		}))
	if err != nil || v.body == nil {
		return nil
	}
	return v
}

// compressRep compresses identity with coding cd at level. An
// incompressible file gives a rep without body, remembered cheaply.
func compressRep(root *os.Root, id *rep, cd encoding.Coding, level int) (*rep, error) {
	src := id.body
	if src == nil {
		var err error
		if src, err = readWhole(root, id.name, id.id); err != nil {
			return nil, err
		}
	}
	out, err := encoding.Compress(cd, level, src)
	if err != nil {
		return nil, err
	}
	if len(out) >= len(src) {
		out = nil // incompressible: remember that, cheaply
	}
	vid := id.id
	vid.size = int64(len(out))
	// Its Last-Modified is identity's (id.modTime as now makes newRep
	// take it); serve takes identity's current one, remade once its time
	// is no longer in the future.
	return newRep(cd, "", vid, out, variantETag(id.id, cd, level), id.modTime.Unix()), nil
}

// maxLevel is the highest level of any coding (brotli's 11): dropVariants
// looks for variants at every level up to it.
const maxLevel = 11

// BackgroundCompressMin is the size from which files are compressed in
// the background rather than while a request waits.
const BackgroundCompressMin = 256 << 10

// bgCompressor runs compression jobs one at a time on one goroutine, at
// a low CPU priority (its own thread with nice 10 on Linux), so that
// requests keep the CPU; its memory is that of one
// job. Jobs are deduplicated by key and at most bgQueue wait; more are
// dropped (a later request schedules them again).
type bgCompressor struct {
	mu      sync.Mutex
	pending map[variantKey]bool
	jobs    chan func()
	stopped bool
	done    atomic.Uint64 // jobs finished, for tests and the status page
}

// stop ends the worker after the job it runs; queued jobs are dropped.
func (b *bgCompressor) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped && b.jobs != nil {
		close(b.jobs)
	}
	b.stopped = true
}

const bgQueue = 64

func (b *bgCompressor) schedule(k variantKey, job func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[k] || b.stopped {
		return
	}
	if b.jobs == nil {
		b.jobs = make(chan func(), bgQueue)
		b.pending = map[variantKey]bool{}
		go b.loop()
	}
	select {
	case b.jobs <- func() {
		job()
		b.mu.Lock()
		delete(b.pending, k)
		b.mu.Unlock()
	}:
		b.pending[k] = true
	default:
	}
}

func (b *bgCompressor) loop() {
	runtime.LockOSThread() // the thread keeps its low priority
	lowerPriority()
	for job := range b.jobs {
		b.mu.Lock()
		stopped := b.stopped
		b.mu.Unlock()
		if stopped {
			continue // drain without running
		}
		job()
		b.done.Add(1)
	}
}

var errChanged = errors.New("file changed while being read")

func readWhole(root *os.Root, name string, want fileID) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if idOf(fi) != want {
		return nil, errChanged
	}
	b := make([]byte, want.size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// invalidate drops an entry found stale while serving it, and the
// variants compressed from the version it described.
func (c *Cache) invalidate(key fileKey) {
	if e, ok := c.files.GetIfPresent(key); ok {
		c.dropVariants(key, e, nil)
	}
	c.files.Invalidate(key)
}

// dropVariants forgets the variants compressed from the file version old
// described, once the file is found changed (now describes the new state,
// or is nil). They are keyed by that version, so they could never be
// served again; this only gives their bytes back to the budget at once.
func (c *Cache) dropVariants(key fileKey, old, now *entry) {
	if old == nil || old.kind != kFile || old.reps[encoding.Identity] == nil {
		return
	}
	id := old.reps[encoding.Identity].id
	if now != nil && now.kind == kFile && now.reps[encoding.Identity] != nil && now.reps[encoding.Identity].id == id {
		return
	}
	for cd := encoding.Zstd; cd < encoding.NumCodings; cd++ {
		for level := range maxLevel + 1 {
			c.variants.Invalidate(varKey(key, id, cd, level))
		}
	}
}

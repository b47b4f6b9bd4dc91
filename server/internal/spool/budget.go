package spool

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
)

// ErrBusy is a body that would take the spool past its Budget: too many
// bodies in files at once, or too many bytes in them, in all or of one
// client. The handlers answer 503 with Retry-After (RFC 9110 section
// 15.6.4): the server has room again once other uploads end.
var ErrBusy = errors.New("request body spool full")

// Budget bounds what the spool files hold at once: open files (each a
// file descriptor, from the same per-process limit as the connections)
// and bytes (disk, on the appliance the SD card), in all and per client.
// Request bodies (Read) and buffered responses (Response) count against
// the same limits; responses together hold at most half of the files and
// of the bytes (see ResponseShare), so that downloads, which only lose
// their buffering past the budget, cannot make uploads, which are refused
// past it, fail. Only bodies past the in-memory part count, and only once
// their bytes have come: a declared Content-Length alone opens no file.
//
// Whenever a spool file is opened the file system of its directory is
// asked (statfs(2)) for its free space: from then until the next file is
// opened the spool holds at most what it held then plus a DiskShare of
// that free space, so it never fills the disk that certificates, deploys
// and the last good configuration need, and a disk that is nearly full
// of other files still leaves the spool some room.
//
// Its limits are set when it is made and never change; all methods are
// safe for concurrent use. A nil *Budget bounds nothing.
type Budget struct {
	files, bytes             int64 // the limits in all
	clientFiles, clientBytes int64 // one client's share
	key                      func(netip.Addr) netip.Prefix

	mu    sync.Mutex
	inUse usage
	resp  usage // the responses' part of inUse
	disk  int64 // bytes the spool may hold by the last statfs (when known)
	known bool  // whether a statfs has set disk
	by    map[netip.Prefix]*usage
}

// ResponseShare is the part of a Budget's files and bytes that buffered
// responses may hold together: a half.
const ResponseShare = 2 // the divisor

// DiskShare is the part of the free space of the spool directory's file
// system, as statfs(2) reports it when a spool file is opened, that the
// spool may take: a half (the divisor).
const DiskShare = 2 // the divisor

type usage struct{ files, bytes int64 }

// NewBudget returns a Budget of files open files and bytes bytes in all,
// of which one client may hold clientFiles and clientBytes. key maps a
// client's address to the network counted as one client (nil: the
// address itself).
func NewBudget(files, bytes, clientFiles, clientBytes int64, key func(netip.Addr) netip.Prefix) *Budget {
	if key == nil {
		key = func(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
	}
	return &Budget{files: files, bytes: bytes, clientFiles: clientFiles, clientBytes: clientBytes,
		key: key, by: map[netip.Prefix]*usage{}}
}

// Use returns the files and bytes held now, in all.
func (b *Budget) Use() (files, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse.files, b.inUse.bytes
}

// clientOf returns the key of a request's RemoteAddr ("ip:port").
func (b *Budget) clientOf(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{} // no address: all such share one key
	}
	return b.key(a.Unmap())
}

// checkDisk reads the free space of dir's file system ("" for
// os.TempDir()) before a spool file is made there, and bounds the bytes
// the spool holds by it (see Budget). When statfs fails the last bound
// stays.
func (b *Budget) checkDisk(dir string) {
	if dir == "" {
		dir = os.TempDir()
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	b.mu.Lock()
	b.disk, b.known = b.inUse.bytes+free/DiskShare, true
	b.mu.Unlock()
}

// take reserves files and bytes for client (resp: for a response), or
// reports false when either would pass a limit.
func (b *Budget) take(client netip.Prefix, files, bytes int64, resp bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.by[client]
	if u == nil {
		u = &usage{}
	}
	if b.inUse.files+files > b.files || b.inUse.bytes+bytes > b.bytes ||
		u.files+files > b.clientFiles || u.bytes+bytes > b.clientBytes ||
		bytes > 0 && b.known && b.inUse.bytes+bytes > b.disk ||
		resp && (b.resp.files+files > b.files/ResponseShare || b.resp.bytes+bytes > b.bytes/ResponseShare) {
		return false
	}
	b.inUse.files += files
	b.inUse.bytes += bytes
	if resp {
		b.resp.files += files
		b.resp.bytes += bytes
	}
	u.files += files
	u.bytes += bytes
	b.by[client] = u
	return true
}

// give returns what take reserved.
func (b *Budget) give(client netip.Prefix, files, bytes int64, resp bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse.files -= files
	b.inUse.bytes -= bytes
	if resp {
		b.resp.files -= files
		b.resp.bytes -= bytes
	}
	if u := b.by[client]; u != nil {
		u.files -= files
		u.bytes -= bytes
		if u.files <= 0 && u.bytes <= 0 {
			delete(b.by, client)
		}
	}
}

// lease is one body's or response's part of a Budget.
type lease struct {
	b      *Budget
	client netip.Prefix
	files  int64
	bytes  int64
	resp   bool // a response's
}

// grow reserves n more bytes.
func (l *lease) grow(n int64) bool {
	if l.b == nil {
		return true
	}
	if !l.b.take(l.client, 0, n, l.resp) {
		return false
	}
	l.bytes += n
	return true
}

func (l *lease) release() {
	if l.b != nil && (l.files != 0 || l.bytes != 0) {
		l.b.give(l.client, l.files, l.bytes, l.resp)
	}
	l.files, l.bytes = 0, 0
}

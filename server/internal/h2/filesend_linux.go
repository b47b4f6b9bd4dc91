package h2

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// readFrames reads from f into the frames' payloads, in order, with one
// readv system call (a frame's 9-byte header lies between each two).
// It returns the bytes read; 0 and nil at end of file.
func readFrames(f *os.File, frames [][]byte) (int, error) {
	fd := int(f.Fd())
	for {
		n, err := unix.Readv(fd, frames)
		if err == unix.EINTR {
			continue
		}
		runtime.KeepAlive(f)
		if err != nil {
			return 0, &os.PathError{Op: "readv", Path: f.Name(), Err: err}
		}
		return n, nil
	}
}

// parkedFile is a file whose descriptor a stream gave back while it
// waits for window (copyParked): where to open it again, and what it
// must still be.
type parkedFile struct {
	path     string
	pos      int64
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

// park records f's path (from /proc/self/fd), offset and identity and
// closes f. It reports false, and leaves f open, for a file that could
// not be found again by its path: not a regular file, or deleted.
func (p *parkedFile) park(f *os.File) bool {
	fd := int(f.Fd())
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink == 0 {
		return false
	}
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(path) {
		return false
	}
	pos, err := unix.Seek(fd, 0, io.SeekCurrent)
	runtime.KeepAlive(f)
	if err != nil {
		return false
	}
	*p = parkedFile{path: path, pos: pos, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim}
	f.Close()
	return true
}

// errFileChanged is a parked file that is no longer the one the response
// was sending.
var errFileChanged = errors.New("h2: file changed while its stream waited for window")

// reopen opens the parked file again at its offset, if it is still the
// same file. O_NOFOLLOW and O_NONBLOCK: a path replaced by a symbolic
// link or a FIFO is not followed or waited on, but found different.
func (p *parkedFile) reopen() (*os.File, error) {
	f, err := os.OpenFile(p.path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Dev) != p.dev || st.Ino != p.ino || st.Size != p.size || st.Mtim != p.mtime {
		f.Close()
		return nil, errFileChanged
	}
	if _, err := f.Seek(p.pos, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

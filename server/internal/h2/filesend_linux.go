package h2

import (
	"os"
	"runtime"

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

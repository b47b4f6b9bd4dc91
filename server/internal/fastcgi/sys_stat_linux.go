//go:build linux && (amd64 || arm64)

package fastcgi

import (
	"syscall"
	"unsafe"
)

// stat is syscall.Stat of the path a+b+c, joined in a stack buffer
// rather than in new heap strings: it runs for every request.
func stat(a, b, c string, st *syscall.Stat_t) error {
	var buf [1024]byte
	n := len(a) + len(b) + len(c)
	if n >= len(buf) {
		return syscall.Stat(a+b+c, st)
	}
	copy(buf[copy(buf[copy(buf[:], a):], b)+len(a):], c)
	buf[n] = 0
	dirfd := -100 // AT_FDCWD: relative paths from the working directory
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(dirfd),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

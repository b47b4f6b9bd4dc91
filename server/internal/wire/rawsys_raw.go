//go:build linux && !race && !msan && !asan

package wire

import (
	"syscall"
	"unsafe"
)

// sysRead is read(2) on a non-blocking socket, without the runtime's
// system call bookkeeping (see the package doc).
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

// sysWrite is write(2) on a non-blocking socket, as sysRead.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

//go:build linux && (race || msan || asan)

package wire

import "syscall"

// Under the race detector (and the memory sanitizers) reads and writes go
// through package syscall, whose annotations tell the detector what the
// kernel wrote and that a write to one socket happens before the read of
// its bytes from another. Raw system calls would hide both.

func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return n, errno(err)
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return n, errno(err)
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}

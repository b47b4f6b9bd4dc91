//go:build unix && !linux

package fastcgi

import "syscall"

// recvPeek reads into b with MSG_PEEK|MSG_DONTWAIT.
func recvPeek(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

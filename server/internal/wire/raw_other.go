//go:build !linux

package wire

import "net"

// Raw returns c: raw system calls are used on Linux only.
func Raw(c net.Conn) net.Conn { return c }

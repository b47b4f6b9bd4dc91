//go:build unix && !(linux && (amd64 || arm64))

package fastcgi

import "syscall"

func stat(a, b, c string, st *syscall.Stat_t) error { return syscall.Stat(a+b+c, st) }

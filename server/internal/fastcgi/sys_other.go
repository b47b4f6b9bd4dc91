//go:build !unix

package fastcgi

import (
	"net"
	"os"
)

type kind int

const (
	kindMissing kind = iota
	kindFile
	kindDir
	kindOther
)

func fileKind(a, b, c string) kind {
	fi, err := os.Stat(a + b + c)
	switch {
	case err != nil:
		return kindMissing
	case fi.Mode().IsRegular():
		return kindFile
	case fi.IsDir():
		return kindDir
	}
	return kindOther
}

// peeker cannot peek here; a stale connection is found when it is used.
type peeker struct{}

func (*peeker) init(net.Conn)    {}
func (*peeker) peerClosed() bool { return false }

//go:build !linux

package server

import "net"

// listenTCP binds addr (Options.Listen's default): elsewhere than on
// Linux, with Go's own keep-alive set on each accepted connection.
func listenTCP(network, addr string) (net.Listener, error) {
	return net.Listen(network, addr)
}

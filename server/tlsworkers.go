package server

import "net"

// maxIdleTLSWorkers bounds the goroutines that wait for a TLS connection
// after serving one (see tlsWorker): enough for the ups and downs of the
// number of connections under steady load, few enough that a burst of
// connections leaves little behind.
const maxIdleTLSWorkers = 16

// tlsWorker serves c (handshake, then its HTTP/1.1 or HTTP/2 engine to
// the end) and then waits for the next connection the accept loop hands
// over, instead of exiting. A new goroutine starts with a small stack
// that a TLS handshake outgrows, copied to a larger one at each growth
// (runtime.newstack, 3.5 % of Arka's CPU per new TLS connection in a CPU
// profile under the newconn-tls load); a goroutine that served a
// connection before has the larger stack already, unless a collection
// shrank it while it waited. At most maxIdleTLSWorkers wait; the rest
// exit, and all exit when the accept loop stops.
func (l *listener) tlsWorker(c net.Conn) {
	for {
		l.handshake(c)
		if l.idleTLS.Add(1) > maxIdleTLSWorkers {
			l.idleTLS.Add(-1)
			return
		}
		select {
		case c = <-l.nextTLS:
		case <-l.stopped:
			l.idleTLS.Add(-1)
			return
		}
	}
}

// handOver gives c to a waiting tlsWorker, or starts one.
func (l *listener) handOver(c net.Conn) {
	select {
	case l.nextTLS <- c:
		l.idleTLS.Add(-1)
	default:
		go l.tlsWorker(c)
	}
}

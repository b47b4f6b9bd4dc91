package wire

import "io"

// PrefixReader lets an engine wait for a client's next bytes without
// holding a read buffer: Fill reads one byte from R alone and keeps it;
// Read gives that byte first, then reads R. An engine's pooled
// bufio.Reader, Reset onto the PrefixReader once Fill returns, reads on
// from the byte (h1's waitRequest, h2's waitFrame).
//
// A PrefixReader belongs to one connection; it is not safe for
// concurrent use.
type PrefixReader struct {
	R io.Reader // the connection
	b [1]byte
	n int // 1 while b holds a byte not yet read
}

// Fill reads R until one byte arrives and keeps it for the next Read. It
// returns nil once it has the byte, even if R reported an error with it
// (the next read of R reports it again); otherwise R's error.
func (p *PrefixReader) Fill() error {
	for {
		n, err := p.R.Read(p.b[:])
		if n > 0 {
			p.n = 1
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Keep makes b the next byte Read gives, as if Fill had read it: for a
// byte another reader of R took first (h1's client-gone watcher).
func (p *PrefixReader) Keep(b byte) { p.b[0], p.n = b, 1 }

// Read gives the byte Fill kept, if any, then reads R.
func (p *PrefixReader) Read(b []byte) (int, error) {
	if p.n > 0 && len(b) > 0 {
		b[0] = p.b[0]
		p.n = 0
		return 1, nil
	}
	return p.R.Read(b)
}

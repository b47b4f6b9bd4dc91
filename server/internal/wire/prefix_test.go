package wire

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// emptyThen returns n empty reads (no byte, no error), then reads r.
type emptyThen struct {
	n int
	r io.Reader
}

func (e *emptyThen) Read(b []byte) (int, error) {
	if e.n > 0 {
		e.n--
		return 0, nil
	}
	return e.r.Read(b)
}

func TestPrefixReader(t *testing.T) {
	// Fill reads one byte alone past empty reads; a bufio.Reader on the
	// PrefixReader then reads it and the rest in order.
	src := iotest.OneByteReader(&emptyThen{n: 3, r: strings.NewReader("GET / HTTP/1.1\r\n")})
	p := &PrefixReader{R: src}
	if err := p.Fill(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(p)
	line, err := br.ReadString('\n')
	if err != nil || line != "GET / HTTP/1.1\r\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	// The kept byte is given once only.
	if n, err := p.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v; want 0, EOF", n, err)
	}

	// A byte with an error counts as a byte; the error comes on the next read.
	boom := errors.New("boom")
	p = &PrefixReader{R: iotest.DataErrReader(strings.NewReader("x"))}
	if err := p.Fill(); err != nil {
		t.Fatalf("Fill with a byte and EOF: %v", err)
	}
	b := make([]byte, 4)
	if n, err := p.Read(b); n != 1 || err != nil || b[0] != 'x' {
		t.Fatalf("Read: %d %q, %v", n, b[:n], err)
	}
	// No byte: Fill reports the reader's error and Read gives nothing kept.
	p = &PrefixReader{R: iotest.ErrReader(boom)}
	if err := p.Fill(); err != boom {
		t.Fatalf("Fill: %v, want boom", err)
	}
	if n, err := p.Read(b); n != 0 || err != boom {
		t.Fatalf("Read after a failed Fill: %d, %v", n, err)
	}
}

func TestPrefixReaderKeep(t *testing.T) {
	p := PrefixReader{R: strings.NewReader("ET /")}
	p.Keep('G')
	b, err := io.ReadAll(&p)
	if err != nil || string(b) != "GET /" {
		t.Fatalf("read %q, %v; want the kept byte first: \"GET /\"", b, err)
	}
}

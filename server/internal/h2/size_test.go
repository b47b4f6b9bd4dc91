package h2

import (
	"testing"
	"unsafe"
)

// TestStreamSizeClass: a stream is one allocation of the 1024-byte size
// class (its size plus the 8-byte header the runtime puts before an
// object of more than 512 bytes with pointers); a field added to it that
// pushes it into the next class (1152) costs every request 128 bytes more
// to clear.
func TestStreamSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(stream{}) + 8; n > 1024 {
		t.Errorf("stream takes %d bytes, over the 1024-byte size class", n)
	}
}

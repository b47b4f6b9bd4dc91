package h2_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// A response's :status 200 is the static table's entry 8, one byte (0x88),
// unless the client lowered SETTINGS_HEADER_TABLE_SIZE: then the next
// header block opens with the dynamic table size update (RFC 7541 section
// 4.2), and the one after it is 0x88 again.
func TestStatusFieldAndTableSizeUpdate(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	c, fr := rawConn(t, addr)
	fr.ReadMetaHeaders = nil // the raw header blocks
	block := func(id uint32) []byte {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		writeHeaders(fr, id, true, reqFields("GET", "/")...)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("stream %d: %v", id, err)
			}
			if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == id {
				return append([]byte(nil), h.HeaderBlockFragment()...)
			}
		}
	}
	if b := block(1); len(b) == 0 || b[0] != 0x88 {
		t.Fatalf("first block starts % x, want 88", b[:min(len(b), 4)])
	}
	fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
	if b := block(3); len(b) < 2 || b[0] != 0x20 || b[1] != 0x88 {
		t.Fatalf("block after SETTINGS_HEADER_TABLE_SIZE 0 starts % x, want 20 88 (size update to 0, then :status 200)", b[:min(len(b), 4)])
	}
	if b := block(5); len(b) == 0 || b[0] != 0x88 {
		t.Fatalf("third block starts % x, want 88", b[:min(len(b), 4)])
	}
}

package h2

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// The stateless encodings decode (with x/net's decoder) to the fields
// they were made from, whatever the name (static table or not) and the
// length (integers past their prefix), and leave the dynamic table empty.
func TestLiteralFieldDecodes(t *testing.T) {
	cases := []hpack.HeaderField{
		{Name: "etag", Value: `"5f1-64a"`},
		{Name: "content-type", Value: "text/html; charset=utf-8"},
		{Name: "x-frame-options", Value: "DENY"},
		{Name: "accept-ranges", Value: "bytes"},
		{Name: "x-long", Value: strings.Repeat("\xff~", 200)}, // not Huffman-shorter, length > 127
		{Name: strings.Repeat("x", 300), Value: ""},
		{Name: "www-authenticate", Value: "Basic realm=\"a\""}, // index 61: past the 4-bit prefix
	}
	var block []byte
	for _, f := range cases {
		block = appendLiteralField(block, f.Name, f.Value)
	}
	var got []hpack.HeaderField
	d := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
	if _, err := d.Write(block); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("decoded %d fields, want %d", len(got), len(cases))
	}
	for i := range cases {
		if got[i].Name != cases[i].Name || got[i].Value != cases[i].Value {
			t.Errorf("field %d: got %q: %q, want %q: %q", i, got[i].Name, got[i].Value, cases[i].Name, cases[i].Value)
		}
	}
	// Nothing was added to the decoder's dynamic table: a 62nd index is
	// out of range.
	if _, err := hpack.NewDecoder(4096, nil).DecodeFull(append(block, 0x80|62)); err == nil {
		t.Error("index 62 decoded: the block added to the dynamic table")
	}
}

// A field is cached on its value's second sighting and then found only
// for the same name and value.
func TestFieldCache(t *testing.T) {
	v := "max-age=" + strconv.Itoa(12345) // a heap string, as a handler's
	if cachedEncoding("Cache-Control", v) != nil {
		t.Fatal("cached before it was offered")
	}
	if cacheField("Cache-Control", "cache-control", v, v) != nil {
		t.Fatal("cached on the first sighting")
	}
	enc := cacheField("Cache-Control", "cache-control", v, v)
	if enc == nil {
		t.Fatal("not cached on the second sighting")
	}
	if got := cachedEncoding("Cache-Control", v); string(got) != string(enc) {
		t.Errorf("lookup: got %x, want %x", got, enc)
	}
	if cachedEncoding("Expires", v) != nil {
		t.Error("found under another name")
	}
	if cachedEncoding("Cache-Control", v[:len(v)-1]) != nil {
		t.Error("found for another value")
	}
}

package encoding

import (
	"strings"
	"testing"
	"unsafe"
)

// RFC 9110 section 12.5.3.
func TestParseAccept(t *testing.T) {
	type q = [NumCodings]int // identity, zstd, br, gzip
	cases := []struct {
		in   []string
		want q
	}{
		{nil, q{1000, 0, 0, 0}},
		{[]string{""}, q{1, 0, 0, 0}},
		{[]string{"gzip, deflate, br, zstd"}, q{1, 1000, 1000, 1000}},
		{[]string{"gzip;q=0.5", "br"}, q{1, 0, 1000, 500}},
		{[]string{"GZip ; Q=0.25 , BR;q=1.0"}, q{1, 0, 1000, 250}},
		{[]string{"x-gzip"}, q{1, 0, 0, 1000}},
		{[]string{"*"}, q{1000, 1000, 1000, 1000}},
		{[]string{"*;q=0.3, br"}, q{300, 300, 1000, 300}},
		{[]string{"*;q=0"}, q{0, 0, 0, 0}},
		{[]string{"*;q=0, identity"}, q{1000, 0, 0, 0}},
		{[]string{"identity;q=0, gzip"}, q{0, 0, 0, 1000}},
		{[]string{"br;q=0"}, q{1, 0, 0, 0}},
		{[]string{"br;q=abc, gzip"}, q{1, 0, 0, 1000}},
		{[]string{"br;q=1.5, gzip;q=0.1234"}, q{1, 0, 0, 0}},
		{[]string{"gzip;q=0.001"}, q{1, 0, 0, 1}},
		{[]string{",,, ,gzip,,"}, q{1, 0, 0, 1000}},
		{[]string{"compress, deflate, bzip2"}, q{1, 0, 0, 0}},
		{[]string{"gzip;level=5;q=0.7"}, q{1, 0, 0, 700}},
		{[]string{"gzip junk"}, q{1, 0, 0, 0}},
	}
	for _, c := range cases {
		a := ParseAccept(c.in)
		var got q
		for i := range got {
			got[i] = a.Q(Coding(i))
		}
		if got != c.want {
			t.Errorf("ParseAccept(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestChoose(t *testing.T) {
	all := [NumCodings]bool{false, true, true, true}
	for in, want := range map[string]Coding{
		"gzip, deflate, br, zstd":          Zstd,
		"gzip, deflate, br":                Brotli, // Safari
		"gzip, deflate":                    Gzip,
		"identity":                         Identity,
		"br;q=0.5, gzip":                   Gzip,
		"identity;q=1, gzip;q=0.5":         Identity,
		"*":                                Zstd,
		"zstd;q=0.1, br;q=0.2, gzip;q=0.1": Brotli,
	} {
		if got := ParseAccept([]string{in}).ChooseDynamic(all); got != want {
			t.Errorf("ChooseDynamic(%q) = %v, want %v", in, got, want)
		}
	}
	noBrotli := [NumCodings]bool{false, true, false, true}
	if got := ParseAccept([]string{"br, gzip"}).ChooseDynamic(noBrotli); got != Gzip {
		t.Errorf("without brotli: %v", got)
	}
	sizes := [NumCodings]int64{1000, 300, 250, 320}
	for in, want := range map[string]Coding{
		"gzip, br, zstd":     Brotli,
		"gzip;q=1, br;q=0.9": Gzip,
		"zstd, gzip":         Zstd,
		"identity;q=0":       Identity, // nothing acceptable: identity anyway
		"":                   Identity,
		"*;q=0.1, identity":  Identity,
	} {
		got, ok := ParseAccept([]string{in}).ChooseStatic(&sizes)
		if !ok || got != want {
			t.Errorf("ChooseStatic(%q) = %v, want %v", in, got, want)
		}
	}
	none := [NumCodings]int64{-1, -1, -1, -1}
	if _, ok := ParseAccept([]string{"gzip"}).ChooseStatic(&none); ok {
		t.Errorf("ChooseStatic with no representation reported ok")
	}
}

func TestParseAcceptAllocs(t *testing.T) {
	in := []string{"gzip, deflate, br, zstd;q=0.9, *;q=0.1"}
	if n := testing.AllocsPerRun(100, func() { ParseAccept(in) }); n != 0 {
		t.Errorf("ParseAccept allocates %v times", n)
	}
}

// The memo answers as the parse does, for values that share a slot and for
// a value whose bytes the engine reuses after the request.
func TestParseAcceptMemo(t *testing.T) {
	values := []string{"gzip, deflate, br, zstd", "gzip, deflate, br", "gzip", "br", "identity;q=0, gzip;q=0.5", "*;q=0", "zstd;q=0.1, gzip", "x-gzip"}
	for i := 0; i < 3; i++ {
		for _, v := range values {
			buf := []byte(v)
			line := unsafe.String(&buf[0], len(buf)) // like the engine's view of its read buffer
			got, want := ParseAccept([]string{line}), parseAccept([]string{v})
			if got != want {
				t.Errorf("round %d, %q: %v, want %v", i, v, got, want)
			}
			for j := range buf {
				buf[j] = 'x' // the buffer is reused: the memo kept its own copy
			}
			if m := acceptMemo[memoSlot(v)].Load(); m == nil || m.field != v {
				t.Errorf("after %q the memo holds %+v", v, m)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParseAccept(values[:1]) }); n != 0 {
		t.Errorf("a repeated value allocates %v times", n)
	}
}

func FuzzParseAccept(f *testing.F) {
	for _, s := range []string{"gzip, deflate, br, zstd", "*;q=0", "identity;q=0, gzip;q=0.5", "br;q=1.000", ";;,,q=", "x-gzip;Q=0.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := ParseAccept(strings.Split(s, "\n"))
		if b := ParseAccept(strings.Split(s, "\n")); b != a || b != parseAccept(strings.Split(s, "\n")) {
			t.Fatalf("memo %v, parse %v", b, a)
		}
		for c := Identity; c < NumCodings; c++ {
			if q := a.Q(c); q < 0 || q > 1000 {
				t.Fatalf("q of %v = %d", c, q)
			}
		}
		sizes := [NumCodings]int64{10, 5, 4, 6}
		if _, ok := a.ChooseStatic(&sizes); !ok {
			t.Fatalf("ChooseStatic found nothing with identity present")
		}
		a.ChooseDynamic([NumCodings]bool{false, true, true, true})
	})
}

package fcgi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	b := AppendHeader(nil, TypeStdout, 0x1234, 0xfedc, 7)
	if len(b) != HeaderLen {
		t.Fatalf("len %d", len(b))
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Version: 1, Type: TypeStdout, RequestID: 0x1234, ContentLength: 0xfedc, PaddingLength: 7}
	if h != want {
		t.Errorf("got %+v want %+v", h, want)
	}
	b[0] = 2
	if _, err := ParseHeader(b); err != ErrVersion {
		t.Errorf("version 2: %v", err)
	}
}

func TestBeginAbortEnd(t *testing.T) {
	b := AppendBeginRequest(nil, 1, RoleResponder, FlagKeepConn)
	want := []byte{1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Errorf("BEGIN_REQUEST % x", b)
	}
	if a := AppendAbortRequest(nil, 1); !bytes.Equal(a, []byte{1, 2, 0, 1, 0, 0, 0, 0}) {
		t.Errorf("ABORT_REQUEST % x", a)
	}
	e := AppendEndRequest(nil, 1, 0xdeadbeef, StatusOverloaded)
	er, err := ParseEndRequest(e[HeaderLen:])
	if err != nil || er.AppStatus != 0xdeadbeef || er.ProtocolStatus != StatusOverloaded {
		t.Errorf("END_REQUEST %+v %v", er, err)
	}
	if _, err := ParseEndRequest(e[HeaderLen : HeaderLen+7]); err != ErrShortBody {
		t.Errorf("short END_REQUEST: %v", err)
	}
}

func TestPairs(t *testing.T) {
	long := strings.Repeat("v", 300)
	for _, tc := range []struct{ name, value string }{
		{"A", ""},
		{"SCRIPT_NAME", "/index.php"},
		{"N", long},
		{strings.Repeat("n", 127), strings.Repeat("x", 128)},
		{strings.Repeat("n", 128), "x"},
	} {
		b := AppendLength(nil, len(tc.name))
		b = AppendLength(b, len(tc.value))
		b = append(b, tc.name...)
		b = append(b, tc.value...)
		if len(b) != PairLen(len(tc.name), len(tc.value)) {
			t.Errorf("PairLen(%d,%d) = %d, encoded %d", len(tc.name), len(tc.value), PairLen(len(tc.name), len(tc.value)), len(b))
		}
		n, v, used, err := ParsePair(append(b, "trailing"...))
		if err != nil || string(n) != tc.name || string(v) != tc.value || used != len(b) {
			t.Errorf("ParsePair: %q %q %d %v", n, v, used, err)
		}
		// Every truncation is an error, never a panic.
		for i := range len(b) {
			if _, _, _, err := ParsePair(b[:i]); err == nil {
				t.Errorf("truncated at %d of %d: no error", i, len(b))
			}
		}
	}
}

// readParams decodes a PARAMS stream the way php-fpm does: each record on
// its own.
func readParams(t *testing.T, stream []byte) (map[string]string, int) {
	t.Helper()
	rd := NewReader(bufio.NewReaderSize(bytes.NewReader(stream), 16))
	got := map[string]string{}
	records := 0
	for {
		h, err := rd.Next()
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if h.Type != TypeParams {
			t.Fatalf("type %s", TypeName(h.Type))
		}
		if (int(h.ContentLength)+int(h.PaddingLength))%8 != 0 {
			t.Errorf("record of %d+%d bytes not aligned", h.ContentLength, h.PaddingLength)
		}
		if h.ContentLength == 0 {
			if _, err := rd.Next(); err != io.EOF {
				t.Errorf("after end of stream: %v", err)
			}
			return got, records
		}
		records++
		content := make([]byte, h.ContentLength)
		if _, err := rd.ReadContent(content); err != nil {
			t.Fatal(err)
		}
		for len(content) > 0 {
			n, v, used, err := ParsePair(content)
			if err != nil {
				t.Fatalf("pair split across records: %v", err)
			}
			got[string(n)] = string(v)
			content = content[used:]
		}
	}
}

func TestParamsWriter(t *testing.T) {
	var w ParamsWriter
	w.Begin(AppendBeginRequest(nil, 1, RoleResponder, 0), 1)
	want := map[string]string{}
	// Enough to need several records; one value near the record limit.
	for i := range 3000 {
		k := "NAME_" + strings.Repeat("k", i%40) + string(rune('A'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		v := strings.Repeat("v", i%200)
		if err := w.Add(k, v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	big := strings.Repeat("B", 65000)
	if err := w.AddBytes("BIG", []byte(big)); err != nil {
		t.Fatal(err)
	}
	want["BIG"] = big
	enc := AppendLength(nil, 3)
	enc = AppendLength(enc, 3)
	enc = append(enc, "PREONE"...)
	w.AddEncoded(enc)
	want["PRE"] = "ONE"
	if err := w.Add("HUGE", strings.Repeat("x", 70000)); err != ErrPairSize {
		t.Errorf("oversized pair: %v", err)
	}
	stream := w.End()
	got, records := readParams(t, stream[16:])
	if records < 3 {
		t.Errorf("only %d records", records)
	}
	if len(got) != len(want) {
		t.Errorf("got %d pairs, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %d bytes, want %d", k, len(got[k]), len(v))
		}
	}
}

func TestAppendStreamAndReader(t *testing.T) {
	// 150000 bytes: three records (two of the largest 8-aligned length,
	// 65528, and the rest), through a 4 KiB buffer.
	content := make([]byte, 150000)
	for i := range content {
		content[i] = byte(i * 7)
	}
	s := AppendStream(nil, TypeStdout, 1, content)
	s = AppendHeader(s, TypeStdout, 1, 0, 0)
	s = AppendStream(s, TypeStderr, 1, []byte("warn"))
	s = AppendEndRequest(s, 1, 0, StatusRequestComplete)
	rd := NewReader(bufio.NewReaderSize(bytes.NewReader(s), 4096))
	var out, errOut bytes.Buffer
	var stdoutLens []int
	for {
		h, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if (int(h.ContentLength)+int(h.PaddingLength))%8 != 0 {
			t.Errorf("record of %d bytes with %d of padding: not a multiple of 8", h.ContentLength, h.PaddingLength)
		}
		if h.Type == TypeStdout {
			stdoutLens = append(stdoutLens, int(h.ContentLength))
		}
		if h.Type == TypeEndRequest {
			break
		}
		dst := &out
		if h.Type == TypeStderr {
			dst = &errOut
		}
		for {
			p, err := rd.Peek()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p) > 4096 {
				t.Fatalf("Peek returned %d bytes, more than the buffer", len(p))
			}
			dst.Write(p)
			rd.Discard(len(p))
		}
	}
	if !bytes.Equal(out.Bytes(), content) || errOut.String() != "warn" {
		t.Errorf("content mismatch: %d bytes, stderr %q", out.Len(), errOut.String())
	}
	if want := []int{65528, 65528, 150000 - 2*65528, 0}; !slices.Equal(stdoutLens, want) {
		t.Errorf("stdout records of %v bytes, want %v", stdoutLens, want)
	}
}

func TestReaderErrors(t *testing.T) {
	full := AppendStream(nil, TypeStdout, 1, []byte("hello"))
	for i := 1; i < len(full); i++ {
		rd := NewReader(bufio.NewReader(bytes.NewReader(full[:i])))
		_, err := rd.Next()
		if err == nil {
			// The header was complete: the content is cut.
			_, err = rd.Next()
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v", i, err)
		}
	}
	rd := NewReader(bufio.NewReader(bytes.NewReader(nil)))
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("empty stream: %v", err)
	}
}

func TestStdinRecord(t *testing.T) {
	buf := make([]byte, HeaderLen+13+8)
	for i := range buf {
		buf[i] = 0xee
	}
	copy(buf[HeaderLen:], "thirteen byte")
	rec := StdinRecord(buf, 1, 13)
	if len(rec) != 24 {
		t.Fatalf("len %d", len(rec))
	}
	h, _ := ParseHeader(rec)
	if h.Type != TypeStdin || h.ContentLength != 13 || h.PaddingLength != 3 || !bytes.Equal(rec[21:], []byte{0, 0, 0}) {
		t.Errorf("%+v % x", h, rec)
	}
}

// FuzzReader feeds arbitrary bytes to the record reader, consuming content
// in the ways the FastCGI client does. It must never panic, never hand out
// more content than a record holds, and account for every byte.
func FuzzReader(f *testing.F) {
	s := AppendStream(nil, TypeStdout, 1, []byte("Status: 200\r\n\r\nbody"))
	s = AppendStream(s, TypeStderr, 1, []byte("oops"))
	s = AppendEndRequest(s, 1, 0, 0)
	f.Add(s, uint8(16))
	f.Add(AppendHeader(nil, TypeStdout, 1, 65535, 255), uint8(1))
	f.Add([]byte{1, 6, 0, 1, 0, 3, 5, 0, 'a', 'b', 'c', 0, 0, 0, 0, 0}, uint8(3))
	f.Add([]byte{2, 6, 0, 1, 0, 0, 0, 0}, uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, bufSize uint8) {
		rd := NewReader(bufio.NewReaderSize(bytes.NewReader(data), int(bufSize)+16))
		consumed := 0
		for range 1000 {
			h, err := rd.Next()
			if err != nil {
				return
			}
			consumed += HeaderLen
			got := 0
			switch h.Type % 3 {
			case 0:
				for {
					p, err := rd.Peek()
					if err != nil {
						break
					}
					if len(p) == 0 {
						t.Fatal("Peek returned nothing without an error")
					}
					got += len(p)
					rd.Discard(len(p))
				}
			case 1:
				buf := make([]byte, h.ContentLength)
				if c, err := rd.ReadContent(buf); err == nil {
					got = len(c)
				}
			}
			if got > int(h.ContentLength) {
				t.Fatalf("read %d content bytes of a %d-byte record", got, h.ContentLength)
			}
			consumed += int(h.ContentLength) + int(h.PaddingLength)
			if consumed > len(data) && rd.Skip() == nil {
				t.Fatalf("skipped past the end of the input")
			}
		}
	})
}

// FuzzParsePair: arbitrary bytes never panic and a parsed pair re-encodes
// to the same bytes when its lengths use the short form where possible.
func FuzzParsePair(f *testing.F) {
	f.Add([]byte{3, 1, 'a', 'b', 'c', 'd'})
	f.Add([]byte{0x80, 0, 0, 3, 1, 'a', 'b', 'c', 'd'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, v, used, err := ParsePair(data)
		if err != nil {
			return
		}
		if used > len(data) || used != PairLen(len(n), len(v))+extraLen(data, len(n), len(v)) {
			t.Fatalf("used %d of %d for %d+%d", used, len(data), len(n), len(v))
		}
	})
}

// extraLen is how many more bytes the encoding in data used for its
// lengths than the shortest form.
func extraLen(data []byte, nl, vl int) int {
	extra := 0
	if data[0]&0x80 != 0 && nl < 128 {
		extra += 3
	}
	i := 1
	if data[0]&0x80 != 0 {
		i = 4
	}
	if data[i]&0x80 != 0 && vl < 128 {
		extra += 3
	}
	return extra
}

package wire

// ParseChunkSize parses the line of a chunk in the chunked transfer
// coding, its CRLF removed: `chunk-size [ chunk-ext ]` (RFC 9112 section
// 7.1). The size is hex digits, at most 15 of them (2^60 bytes: no real
// chunk is larger, and 16 would overflow int64); extensions are ignored
// but must start with ";" after optional whitespace and hold no control
// bytes other than HTAB (RFC 9110 section 5.5). ok is false for anything
// else, including whitespace not followed by an extension. Used for
// request bodies (h1) and upstream responses (proxy), so both ends frame
// a chunked message the same way.
func ParseChunkSize(line []byte) (size int64, ok bool) {
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			goto ext
		}
		if i >= 15 {
			return 0, false
		}
		size = size<<4 | int64(d)
	}
ext:
	if i == 0 {
		return 0, false
	}
	rest := line[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != ';' || len(rest) == 0 && len(line) > i {
		return 0, false // whitespace only before a chunk extension (BWS ";")
	}
	for _, c := range rest {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return 0, false
		}
	}
	return size, true
}

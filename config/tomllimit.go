package config

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

// MaxTOMLNesting bounds how deeply arrays and inline tables may nest in a
// TOML file Arka reads (site files, the appliance's settings.txt): the
// TOML library's time and memory grow with the square of the nesting (a
// 20 KB file nested 10,000 deep costs 186 MB), and no setting needs more
// than a few levels.
const MaxTOMLNesting = 32

// MaxTOMLSize bounds the size of a TOML file Arka reads, in bytes (2 MiB:
// ten thousand routes take under 1 MiB); decoding costs several times the
// file's size in memory, and a Pi Zero 2 W has 416 MiB.
const MaxTOMLSize = 2 << 20

// DecodeTOML decodes data (the file name: used in messages) into v with
// the TOML library, after CheckTOML: every TOML decode of Arka's goes
// through it, so no file costs more than its bounds allow. The error is
// CheckTOML's *Error or the library's (see TOMLDecodeError).
func DecodeTOML(name string, data []byte, v any) (toml.MetaData, error) {
	if e := CheckTOML(name, data); e != nil {
		return toml.MetaData{}, e
	}
	return toml.Decode(string(data), v)
}

// CheckTOML refuses, in one pass and without allocating, a document
// larger than MaxTOMLSize or whose arrays and inline tables (and table
// headers' brackets) nest deeper than MaxTOMLNesting: "file:line:col:
// nesting deeper than 32" at the first bracket too many. Brackets inside
// strings (basic, literal, multi-line) and comments do not count. Other
// syntax is left to the decoder.
func CheckTOML(name string, data []byte) *Error {
	at := func(off int, msg string) *Error {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		col := off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
		if line == 1 && bytes.HasPrefix(data, []byte("\ufeff")) {
			col -= 3
		}
		return &Error{File: name, Line: line, Col: max(col, 1), Msg: msg}
	}
	if len(data) > MaxTOMLSize {
		return at(MaxTOMLSize, fmt.Sprintf("file larger than %d MiB, the most a TOML file Arka reads may have", MaxTOMLSize>>20))
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case '"', '\'':
			i = stringEnd(data, i)
		case '[', '{':
			if depth++; depth > MaxTOMLNesting {
				return at(i, fmt.Sprintf("nesting deeper than %d (arrays and inline tables)", MaxTOMLNesting))
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// stringEnd returns the offset of the last byte of the TOML string that
// starts at data[i] (a quote): basic "…" and literal '…' end at their
// quote or the line's end (a mistake the decoder reports), multi-line
// triple-quoted ones at their closing triple; a backslash escapes the
// next byte in basic strings only.
func stringEnd(data []byte, i int) int {
	q := data[i]
	triple := bytes.HasPrefix(data[i:], []byte{q, q, q})
	if triple {
		i += 2
	}
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\\' && q == '"':
			i++
		case c == '\n' && !triple:
			return i - 1
		case c == q && (!triple || bytes.HasPrefix(data[i:], []byte{q, q, q})):
			if triple {
				i += 2
			}
			return i
		}
	}
	return len(data) - 1
}

package config

import (
	"strings"

	"github.com/BurntSushi/toml"
)

// TOMLFile locates keys and decode errors in a TOML document other than a
// site file (the appliance's settings file, appliance/settings), so that
// every TOML file Arka reads reports mistakes the same way:
// "file:line:col: message".
type TOMLFile struct {
	Name string // the file name used in messages
	Data []byte
	pos  *posIndex
}

// NewTOMLFile indexes data. Call it only on a document that decoded
// without a syntax error (the index assumes valid syntax).
func NewTOMLFile(name string, data []byte) *TOMLFile {
	return &TOMLFile{Name: name, Data: data, pos: newPosIndex(data)}
}

// Errorf returns an Error at the key with the indexed path (for example
// "wifi.network[1].ssid", 0-based), or at the nearest enclosing key that is
// written in the file.
func (f *TOMLFile) Errorf(path, msg string) *Error {
	line, col := f.pos.at(path)
	return &Error{File: f.Name, Line: line, Col: col, Msg: msg}
}

// Unknown returns an Error for each key the decoder did not use (plain
// paths joined with "."), the outermost unknown key only.
func (f *TOMLFile) Unknown(undecoded []toml.Key) Errors {
	var errs Errors
	for _, k := range unknownKeys(f.pos, undecoded) {
		errs = append(errs, &Error{File: f.Name, Line: k.line, Col: k.col, Msg: "unknown key " + `"` + k.path + `"`})
	}
	return errs
}

// unknownKey is a key the decoder did not use, with its position.
type unknownKey struct {
	path      string // plain path joined with "."
	line, col int
}

// unknownKeys returns the keys of undecoded in order, each at its own
// occurrence in the file, leaving out keys inside an unknown table (only
// the outermost unknown key is a mistake to report).
func unknownKeys(pos *posIndex, undecoded []toml.Key) []unknownKey {
	unknown := make(map[string]bool, len(undecoded))
	for _, k := range undecoded {
		unknown[strings.Join(k, ".")] = true
	}
	var out []unknownKey
	seen := map[string]int{}
outer:
	for _, k := range undecoded {
		plain := strings.Join(k, ".")
		n := seen[plain]
		seen[plain]++
		for j := 1; j < len(k); j++ {
			if unknown[strings.Join(k[:j], ".")] {
				continue outer
			}
		}
		line, col := pos.nth(plain, n)
		out = append(out, unknownKey{plain, line, col})
	}
	return out
}

// TOMLDecodeError turns an error from toml.Decode of data into an Error
// at file:line:col.
func TOMLDecodeError(name string, data []byte, err error) *Error {
	return decodeError(name, data, err)
}

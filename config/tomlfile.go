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
	unknown := map[string]bool{}
	for _, k := range undecoded {
		unknown[strings.Join(k, ".")] = true
	}
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
		line, col := f.pos.nth(plain, n)
		errs = append(errs, &Error{File: f.Name, Line: line, Col: col, Msg: "unknown key " + `"` + plain + `"`})
	}
	return errs
}

// TOMLDecodeError turns an error from toml.Decode of data into an Error
// at file:line:col.
func TOMLDecodeError(name string, data []byte, err error) *Error {
	return decodeError(name, data, err)
}

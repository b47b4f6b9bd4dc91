package config

import (
	"fmt"
	"reflect"

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

// Unknown returns an Error for each key of md, the decoding of f into
// into (a pointer to the struct the file decodes into), that into's type
// does not have: keys the decoder did not use, and keys that name a field
// only when case is ignored (the decoder's matching; in a file they are
// other keys). Only the outermost unknown key is reported, with the
// known key of its table it is closest to, if any ("did you mean").
func (f *TOMLFile) Unknown(md toml.MetaData, into any) Errors {
	s := keySchema{root: reflect.TypeOf(into).Elem()}
	var errs Errors
	for _, k := range unknownKeys(f.pos, &md, s) {
		errs = append(errs, &Error{File: f.Name, Line: k.line, Col: k.col, Msg: fmt.Sprintf("unknown key %q%s", k.path, s.suggest(k.path, nil))})
	}
	return errs
}

// unknownKey is a key the decoder did not use, with its position.
type unknownKey struct {
	path      string // plain path joined with "."
	line, col int
}

// TOMLDecodeError turns an error from toml.Decode of data into into (a
// pointer to the struct the file decodes into, whose types say what a
// key's value should be) into an Error at file:line:col.
func TOMLDecodeError(name string, data []byte, err error, into any) *Error {
	return decodeErrorIn(name, &posIndex{src: data}, err, keySchema{root: reflect.TypeOf(into).Elem()})
}

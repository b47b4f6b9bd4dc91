package config

import (
	"reflect"
	"strings"
)

// tableType is the struct a key of type t holds (through pointers and
// lists of tables), or nil.
func tableType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// structKeys appends the keys of struct t (embedded structs included).
func structKeys(t reflect.Type, keys *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch name := tomlKey(f); {
		case f.Anonymous && name == "":
			structKeys(f.Type, keys)
		case name != "" && name != "-":
			*keys = append(*keys, name)
		}
	}
}

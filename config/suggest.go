package config

import (
	"reflect"
	"strings"
)

// tableKeys lists the keys valid in the table at a dotted key path
// ("global", "routes.handler", "" for the top level), read from the
// types the file decodes into, so a hint for an unknown key names a key
// of the same table. It returns nil when the path does not lead to a
// table of known keys (a map such as php.ini).
func tableKeys(path string) []string {
	t := reflect.TypeOf(rawSite{})
	if path != "" {
		for i, seg := range strings.Split(path, ".") {
			if i == 1 && seg == "handler" && t == reflect.TypeOf(rawRoute{}) {
				if path == "routes.handler" {
					return handlerKeys()
				}
				return nil
			}
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = tableType(f.Type)
			if t == nil {
				return nil
			}
		}
	}
	var keys []string
	structKeys(t, &keys)
	return keys
}

// handlerKeys is every key of any handler type (the type names the table).
func handlerKeys() []string {
	// Keys decoded in their written form, beside the typed fields.
	keys := []string{"type", "allow", "trusted_proxies"}
	for _, typ := range HandlerTypes {
		structKeys(tableType(reflect.TypeOf(newHandler(typ))), &keys)
	}
	return keys
}

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

// fieldByKey finds the field decoding key in t (embedded structs
// included; an outer field wins, as in the decoder).
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); !f.Anonymous && tomlKey(f) == key {
			return f, true
		}
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Anonymous && tomlKey(f) == "" {
			if g, ok := fieldByKey(f.Type, key); ok {
				return g, true
			}
		}
	}
	return reflect.StructField{}, false
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

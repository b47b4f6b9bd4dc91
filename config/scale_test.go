package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestManyErrorsLinear: a large file with a mistake in every route is
// reported whole, each error at its own route, in time linear in the
// file. Locating an error once scanned the file from its start (and the
// lenient decoding indexed it again per error): 20,000 mistakes in a
// 1.6 MB file took 224 s, and 20,000 values of the wrong type did not
// finish; now about a second each (10,000 here: 56 s and more before). The bound is generous for a shared
// machine; the point is that it is not quadratic.
func TestManyErrorsLinear(t *testing.T) {
	n := 10000
	if raceEnabled {
		n = 1000 // the race detector slows this tenfold; the count below still holds
	}
	for _, c := range []struct {
		name, route, want string
		line              int // of the error within a route's lines
	}{
		{"unknown key", "path = \"/p%d\"\nhandler = { type = \"static\", root = \"www\", bogus = 1 }\n", `unknown key "routes.handler.bogus"`, 3},
		{"wrong type", "path = \"/p%d\"\nallow = \"x\"\nhandler = { type = \"static\", root = \"www\" }\n", `routes.allow: expected an array, got a string`, 3},
		{"handler type", "path = \"/p%d\"\nhandler = { type = \"static\", root = 5 }\n", `root: expected a string, got an integer`, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			for i := range n {
				b.WriteString("[[routes]]\n")
				fmt.Fprintf(&b, c.route, i)
			}
			per := strings.Count(c.route, "\n") + 1
			start := time.Now()
			builds := indexBuilds.Load()
			_, err := Parse("many.toml", []byte(b.String()))
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v", d)
			}
			// The file is indexed once, whatever the number of errors.
			if k := indexBuilds.Load() - builds; k != 1 {
				t.Errorf("indexed %d times", k)
			}
			errs, _ := err.(Errors)
			if len(errs) != n {
				t.Fatalf("%d errors, want %d: %v", len(errs), n, err)
			}
			for i, e := range errs {
				if want := i*per + c.line; e.Line != want || e.Col == 0 || !strings.Contains(e.Msg, c.want) {
					t.Fatalf("error %d: %v, want line %d: %s", i, e, want, c.want)
				}
			}
		})
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// A syntax error is located at file:line:col, and named only by what it
// is in: an error in a table header belongs to no table (the table before
// it is not the one being written), an error in a value to its key.
func TestSyntaxErrorsNameTheirTable(t *testing.T) {
	const head = "listen = [\":80\"]\n[tls]\nlisten = [\":443\"]\ncert = \"c.pem\"\n"
	cases := []struct{ name, src, want string }{
		{"unterminated table header", head + "[log\npath = \"x\"\n",
			`:5:5: expected '.' or ']' to end table name, but got '\n' instead`},
		{"unterminated header at end of file", head + "[log",
			`:5:4: expected '.' or ']' to end table name, but got '\x00' instead`},
		{"space in table name", head + "[log x]\n",
			`:5:6: expected '.' or ']' to end table name, but got 'x' instead`},
		{"empty table name", head + "[]\n",
			`:5:2: unexpected end of table name (table names cannot be empty)`},
		{"unterminated array of tables", head + "[[routes]\npath = \"/\"\n",
			`:5:9: expected end of table array name delimiter ']', but got '\n' instead`},
		{"unterminated quoted table name", head + "[\"log\n",
			`:5:6: strings cannot contain newlines`},
		{"indented header", head + "  [log\n",
			`:5:7: expected '.' or ']' to end table name, but got '\n' instead`},
		{"table redefined", head + "[tls.cert]\n",
			`:5:2: tls.cert: given twice (first at 4:1)`},
		{"junk after a header", head + "[log] x\n",
			`:5:6: expected a top-level item to end with a newline, comment, or EOF, but got 'x' instead`},
		// Not a header: the line is inside tls (its key) or inside a value.
		{"key without =", head + "key \"k.pem\"\n",
			`:5:5: tls: expected '.' or '=', but got '"' instead`},
		{"array line starting with [", head + "alpn = [\n[\"h2\" \"x\"]\n]\n",
			`:6:7: tls.alpn: expected a comma (',') or array terminator (']'), but got '"'`},
		// The library's column of an error at the start of a line is one
		// past the end of the line before (QA L1).
		{"duplicate key at the start of a line", "listen = [\"127.0.0.1:80\"]\nlisten = [\"127.0.0.1:8080\"]\n",
			`:2:1: listen: given twice (first at 1:1)`},
		{"duplicate key in an inline table", "[[routes]]\nhandler = { type = \"static\", type = \"proxy\" }\n",
			`:2:30: routes.handler.type: given twice (first at 2:13)`},
		{"table given twice", head + "[tls]\n",
			`:5:2: tls: given twice (first at 2:2)`},
		{"key given twice in the second of an array of tables", "[[routes]]\npath = \"/\"\n[[routes]]\npath = \"/a/\"\npath = \"/b/\"\n",
			`:5:1: routes.path: given twice (first at 4:1)`},
		// An array not closed before the next statement: at its '[', where
		// the ']' is missing, saying where the parser found the next line.
		{"unclosed array", "default = true\nlisten = [\"x\"\n[[routes]]\npath = \"/\"\n",
			`:2:10: listen: array not closed: ']' is missing before 3:1`},
		{"unclosed array over lines", "listen = [\n  \"x\",\n  \"y\"\nrequest_id = true\n",
			`:1:10: listen: array not closed: ']' is missing before 4:1`},
		// A bare word for a key whose value is true or false (QA L3).
		{"boolean misspelt", "default = tru\n",
			`:1:11: default: expected true or false, found "tru"`},
		{"boolean in a handler", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\", browse = yes }\n",
			`:3:53: routes.handler.browse: expected true or false, found "yes"`},
		{"bare word for a string", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = www }\n",
			`:3:37: routes.handler.root: expected value but found "www" instead; a string must be in double quotes: key = "value"`},
		{"array without a comma", "listen = [\n  \"x\"\n  \"y\"\n]\n",
			`:3:3: listen: expected a comma (',') or array terminator (']'), but got '"'`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "site.toml")
			if err := os.WriteFile(f, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(f)
			if err == nil {
				t.Fatalf("no error for\n%s", c.src)
			}
			if got, want := err.Error(), f+c.want; got != want {
				t.Errorf("error\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A value written without its quotes is not echoed in the error when its
// key names a secret (a password, passphrase, token or private key): the
// error goes to logs and status pages. Other keys keep the echo, which
// helps find the mistake.
func TestSyntaxErrorHidesSecrets(t *testing.T) {
	for _, c := range []struct {
		src, hidden string
	}{
		{"[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", body = \"x\" }\n[env]\nDB_PASSWORD = s3cretword\n", "s3cretword"},
		{"api_token = abcdefsecret\n", "abcdefsecret"},
		{"[wifi]\npassphrase = correcthorsebatterystaple\n", "correcthorsebatterystaple"},
	} {
		err := decodeError("s.toml", []byte(c.src), decodeErr(c.src))
		if strings.Contains(err.Error(), c.hidden) || strings.Contains(err.Error(), c.hidden[:6]) {
			t.Errorf("%q: the secret is in the error: %v", c.src, err)
		}
		if !strings.Contains(err.Error(), "quote") {
			t.Errorf("%q: the error does not say to quote the value: %v", c.src, err)
		}
	}
	err := decodeError("s.toml", []byte("hostname = garden\n"), decodeErr("hostname = garden\n"))
	if !strings.Contains(err.Error(), `"garden"`) {
		t.Errorf("a value of a key that is no secret is no longer echoed: %v", err)
	}
}

func decodeErr(src string) error {
	var m map[string]any
	_, err := toml.Decode(src, &m)
	return err
}

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// TestLoadableStandIns: what serves, partially, for each site file with a
// mistake (loadable): its names answering 503 when they can be kept, with
// a self-signed certificate when the mistake is in [tls]; the names of its
// last good copy when it no longer decodes; nothing, with a note saying
// why, when its names are another site's or unknown.
func TestLoadableStandIns(t *testing.T) {
	dir := t.TempDir()
	www := t.TempDir()
	good := `default = true
server_names = ["a.test"]
listen = ["127.0.0.1:8080"]
[[routes]]
path = "/"
handler = { type = "static", root = "` + www + `" }
`
	noRoot := func(names, tls string) string {
		return `server_names = [` + names + `]
listen = ["127.0.0.1:8080"]
` + tls + `[[routes]]
path = "/"
handler = { type = "static" }
`
	}
	a := config.File{Name: filepath.Join(dir, "a.toml"), Data: good}
	b := filepath.Join(dir, "b.toml")
	copyOfB := config.File{Name: b, Data: strings.Replace(noRoot(`"c.test"`, ""), `type = "static" }`, `type = "static", root = "`+www+`" }`, 1)}
	badTLS := "[tls]\nlisten = [\"127.0.0.1:8443\"]\nmin_version = \"1.1\"\n"
	for _, tc := range []struct {
		name     string
		b        string
		lastGood []config.File
		// names is the names of b's stand-in answering 503, "" for none;
		// served: b's last good copy serves as it did.
		names    string
		tlsOnly  bool
		served   bool
		noteWant string
	}{
		{name: "names kept", b: noRoot(`"b.test"`, ""), names: "b.test", noteWant: "its names answer 503"},
		{name: "tls mistake", b: noRoot(`"b.test"`, badTLS), names: "b.test", tlsOnly: true, noteWant: "its names answer 503"},
		{name: "names of another site", b: noRoot(`"a.test"`, ""), noteWant: "its names cannot be kept for it ("},
		{name: "undecodable", b: "server_names = [", noteWant: "its server names are unknown"},
		{name: "undecodable, last good copy serves", b: "server_names = [", lastGood: []config.File{a, copyOfB}, served: true, noteWant: "serving the copy of this file that last loaded"},
		{name: "undecodable, names of the last good copy", b: "server_names = [", lastGood: []config.File{a, {Name: b, Data: noRoot(`"c.test"`, "")}},
			names: "c.test", noteWant: "the names of the copy of this file that last loaded answer 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := []config.File{a, {Name: b, Data: tc.b}}
			_, err := parse(files)
			if err == nil {
				t.Fatal("b.toml has no mistake")
			}
			var lg *lastGood
			if tc.lastGood != nil {
				lg = &lastGood{Saved: time.Now(), Files: tc.lastGood}
			}
			sites, notes := loadable(files, err, lg)
			if len(sites) == 0 || sites[0].File != a.Name || sites[0].Routes[0].Handler.Type() != "static" {
				t.Fatalf("a.toml does not serve: %+v", sites)
			}
			if note := notes[b]; !strings.HasPrefix(note, b+": ") || !strings.Contains(note, tc.noteWant) {
				t.Errorf("note %q; want %q", note, tc.noteWant)
			}
			if tc.names == "" && !tc.served {
				if len(sites) != 1 {
					t.Errorf("%d sites serve; want a.toml's only", len(sites))
				}
				return
			}
			if len(sites) != 2 || sites[1].File != b {
				t.Fatalf("b.toml has no stand-in: %+v", sites)
			}
			s := sites[1]
			if tc.served {
				if s.Routes[0].Handler.Type() != "static" || s.ServerNames[0] != "c.test" {
					t.Errorf("b.toml's last good copy does not serve: %+v", s)
				}
				return
			}
			if len(s.Routes) != 1 || s.Routes[0].Handler.Type() != "arka-unavailable" || strings.Join(s.ServerNames, ",") != tc.names {
				t.Errorf("b.toml's stand-in: names %q routes %+v; want %q answering 503", s.ServerNames, s.Routes, tc.names)
			}
			if tc.tlsOnly && (len(s.TLS.Listen) != 1 || s.TLS.MinVersion == "1.1") {
				t.Errorf("b.toml's stand-in keeps a [tls] that does not load, or not its listen: %+v", s.TLS)
			}
		})
	}
}

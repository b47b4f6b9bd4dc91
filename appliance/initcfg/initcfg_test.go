package initcfg

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTripAndExpand(t *testing.T) {
	c := Config{Services: []Service{
		{Path: "/user/arka", Args: []string{"-c", Sites, "-state", State}},
		{Path: "/gokrazy/dhcp", Args: []string{"-interface=" + Netif}, WaitForClock: false},
	}}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "init.json")
	os.WriteFile(p, b, 0o644)
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v", got)
	}
	args := Expand(got.Services[0].Args, map[string]string{Sites: "/perm/arka/sites", State: "/perm/arka/state"})
	if strings.Join(args, " ") != "-c /perm/arka/sites -state /perm/arka/state" {
		t.Errorf("Expand: %q", args)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, body := range map[string]string{
		"relative path": `{"services":[{"path":"user/arka"}]}`,
		"unknown key":   `{"services":[{"path":"/user/arka","argz":[]}]}`,
		"not JSON":      `services = []`,
	} {
		p := filepath.Join(t.TempDir(), "init.json")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

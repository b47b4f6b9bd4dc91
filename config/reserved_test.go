package config

import (
	"strings"
	"testing"
)

// TestCheckReserved: a site listening (plain or TLS, any host) on a port
// the machine keeps for itself is refused at the listen entry, saying
// what the port is for; other ports pass.
func TestCheckReserved(t *testing.T) {
	res, err := ParseReservedPorts("8080=the device's web UI, 8443=the device's update/deploy API")
	if err != nil || len(res) != 2 || res[1].Port != 8443 || res[1].What != "the device's update/deploy API" {
		t.Fatalf("ParseReservedPorts: %+v %v", res, err)
	}
	for _, bad := range []string{"8443", "x=y", "0=zero", "70000=big", "8443="} {
		if _, err := ParseReservedPorts(bad); err == nil {
			t.Errorf("ParseReservedPorts(%q) accepted", bad)
		}
	}
	if r, err := ParseReservedPorts(""); err != nil || len(r) != 0 {
		t.Errorf("empty list: %v %v", r, err)
	}
	src := "server_names = [\"a.example\"]\nlisten = [\":80\", \"127.0.0.1:8080\"]\n\n[tls]\nlisten = [\":443\", \"[::]:8443\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", body = \"hi\" }\n"
	s, err := Parse("sites/a.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckReserved([]*Site{s}, res)
	want := []string{
		"sites/a.toml:2:18: port 8080 is the device's web UI; a site cannot listen on it",
		"sites/a.toml:5:19: port 8443 is the device's update/deploy API; a site cannot listen on it",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("CheckReserved:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if err := CheckReserved([]*Site{s}, nil); err != nil {
		t.Errorf("nothing reserved: %v", err)
	}
}

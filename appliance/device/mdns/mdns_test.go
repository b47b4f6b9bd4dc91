package mdns

import (
	"net"
	"strings"
	"testing"
	"time"

	hmdns "github.com/hashicorp/mdns"
	"github.com/miekg/dns"
)

func testZone(t *testing.T) *Zone {
	z := &Zone{Hostname: "garden", Instance: "garden", Services: []Service{{Type: "_http._tcp", Port: 80, TXT: []string{"path=/"}}, {Type: "_https._tcp", Port: 443, TXT: []string{"path=/"}}}}
	if err := z.SetIPs([]net.IP{net.ParseIP("192.168.1.20"), net.ParseIP("fe80::1")}); err != nil {
		t.Fatal(err)
	}
	return z
}

func answers(z *Zone, name string, qtype uint16) []string {
	var out []string
	for _, rr := range z.Records(dns.Question{Name: name, Qtype: qtype, Qclass: dns.ClassINET}) {
		h := rr.Header()
		out = append(out, dns.TypeToString[h.Rrtype]+" "+strings.TrimSpace(strings.TrimPrefix(rr.String(), h.String())))
	}
	return out
}

func TestZoneRecords(t *testing.T) {
	z := testZone(t)
	for _, c := range []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"garden.local.", dns.TypeA, []string{"A 192.168.1.20"}},
		{"GARDEN.local.", dns.TypeAAAA, []string{"AAAA fe80::1"}},
		{"garden.local.", dns.TypeANY, []string{"A 192.168.1.20", "AAAA fe80::1"}},
		{"garden.local.", dns.TypeTXT, nil},
		{"other.local.", dns.TypeA, nil},
		{"_services._dns-sd._udp.local.", dns.TypePTR, []string{"PTR _http._tcp.local.", "PTR _https._tcp.local."}},
		{"_https._tcp.local.", dns.TypePTR, []string{"PTR garden._https._tcp.local.", "SRV 10 1 443 garden.local.", "A 192.168.1.20", "AAAA fe80::1", `TXT "path=/"`}},
		{"garden._http._tcp.local.", dns.TypeSRV, []string{"SRV 10 1 80 garden.local.", "A 192.168.1.20", "AAAA fe80::1"}},
	} {
		got := answers(z, c.name, c.qtype)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s %s: %q, want %q", c.name, dns.TypeToString[c.qtype], got, c.want)
		}
	}
}

// TestResponderOnTheLAN runs the responder on this machine's interfaces
// and resolves the service with hashicorp/mdns's own client. Machines
// without a multicast-capable interface (containers) skip it.
func TestResponderOnTheLAN(t *testing.T) {
	ifs, err := Interfaces()
	if err != nil || len(ifs) == 0 {
		t.Skip("no multicast-capable interface")
	}
	z := &Zone{Hostname: "arka-mdns-test", Instance: "arka test", Services: []Service{{Type: "_arkatest._tcp", Port: 8080}}}
	r := &Responder{Zone: z, Logf: t.Logf}
	r.Start()
	defer r.Stop()
	time.Sleep(200 * time.Millisecond)
	var name string
	for n := range ifs {
		name = n
		break
	}
	ifc, _ := net.InterfaceByName(name)
	entries := make(chan *hmdns.ServiceEntry, 8)
	p := hmdns.DefaultParams("_arkatest._tcp")
	p.Entries, p.Timeout, p.Interface, p.DisableIPv6 = entries, 2*time.Second, ifc, true
	p.Logger = nil
	go func() {
		hmdns.Query(p)
		close(entries)
	}()
	found := false
	for e := range entries {
		if e.Port == 8080 && e.Host == "arka-mdns-test.local." {
			found = true
		}
	}
	if !found {
		t.Skip("no answer over multicast on " + name + " (the network may not loop multicast back)")
	}
}

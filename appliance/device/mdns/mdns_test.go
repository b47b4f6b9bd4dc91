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
	links, err := Links()
	if err != nil || len(links) == 0 {
		t.Skip("no multicast-capable interface")
	}
	z := &Zone{Hostname: "arka-mdns-test", Instance: "arka test", Services: []Service{{Type: "_arkatest._tcp", Port: 8080}}}
	r := &Responder{Zone: z, Logf: t.Logf}
	r.Start()
	defer r.Stop()
	time.Sleep(200 * time.Millisecond)
	ifc, name := &links[0].Interface, links[0].Interface.Name
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

// query sends a question for name's A record (ID 4711) from a UDP socket
// bound to from to the responder at to, and returns the response with
// answers that arrives within wait (none: nil).
func query(t *testing.T, from, to *net.UDPAddr, name string, wait time.Duration) *dns.Msg {
	t.Helper()
	c, err := net.ListenUDP("udp", from)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.Id = 4711
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteToUDP(b, to); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 9000)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil // deadline: no answer
		}
		var r dns.Msg
		if r.Unpack(buf[:n]) == nil && r.Response && len(r.Answer) > 0 {
			return &r
		}
	}
}

// TestResponderAnswersOnlyOnLink runs the responder on this machine's
// interfaces and sends it unicast queries to port 5353 at an interface's
// IPv4 address: from that address, which is on the link, it is answered;
// from 127.0.0.1, a source on no link the responder runs on, it is not
// (RFC 6762 section 11).
func TestResponderAnswersOnlyOnLink(t *testing.T) {
	links, err := Links()
	if err != nil || len(links) == 0 {
		t.Skip("no multicast-capable interface")
	}
	var to net.IP
	for _, l := range links {
		for _, p := range l.Prefixes {
			if p.IP.To4() != nil {
				to = p.IP
			}
		}
	}
	if to == nil {
		t.Skip("no IPv4 address on a multicast-capable interface")
	}
	z := &Zone{Hostname: "arka-offlink-test", Instance: "arka-offlink-test", Services: []Service{{Type: "_arkatest._tcp", Port: 8080}}}
	r := &Responder{Zone: z, Logf: t.Logf}
	r.Start()
	defer r.Stop()
	time.Sleep(200 * time.Millisecond)
	if r := query(t, &net.UDPAddr{IP: to}, &net.UDPAddr{IP: to, Port: 5353}, "arka-offlink-test.local.", 2*time.Second); r == nil {
		t.Errorf("query from %s to %[1]s:5353 not answered", to)
	}
	if r := query(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, &net.UDPAddr{IP: to, Port: 5353}, "arka-offlink-test.local.", 500*time.Millisecond); r != nil {
		t.Errorf("query from 127.0.0.1 to %s:5353 answered: %v", to, r)
	}
}

func TestOnLink(t *testing.T) {
	var prefixes []*net.IPNet
	for _, c := range []string{"192.168.1.20/24", "fd00::2/64", "10.9.8.7/32"} {
		ip, n, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip // as net.Interface.Addrs gives them
		prefixes = append(prefixes, n)
	}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"192.168.1.7", true},
		{"192.168.1.20", true},
		{"::ffff:192.168.1.7", true},
		{"192.168.2.7", false},
		{"10.9.8.7", true},
		{"10.9.8.6", false},
		{"169.254.10.1", true}, // link-local: on every link
		{"fe80::1234", true},
		{"fd00::5", true},
		{"fd00:0:0:1::5", false},
		{"2001:db8::1", false},
		{"8.8.8.8", false},
		{"127.0.0.1", false},
		{"::1", false},
		{"0.0.0.0", false},
		{"224.0.0.251", false},
	} {
		if got := onLink(net.ParseIP(c.src), prefixes); got != c.want {
			t.Errorf("onLink(%s) = %v, want %v", c.src, got, c.want)
		}
	}
	if onLink(net.ParseIP("192.168.1.7"), nil) || !onLink(net.ParseIP("fe80::1"), nil) {
		t.Error("an interface without addresses: only link-local sources are on link")
	}
}

// TestServerAnswersOnlyOnLink runs the server on a loopback socket and
// sends it real queries from 127.0.0.1: answered when the loopback
// interface's prefixes hold 127.0.0.1, unanswered when they do not or
// when only another interface's do (the link a query arrived on counts).
func TestServerAnswersOnlyOnLink(t *testing.T) {
	var lo *net.Interface
	ifs, _ := net.Interfaces()
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 && ifs[i].Flags&net.FlagUp != 0 {
			lo = &ifs[i]
		}
	}
	if lo == nil {
		t.Skip("no loopback interface")
	}
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := newPacketConn(uc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &server{zone: testZone(t)}
	_, loNet, _ := net.ParseCIDR("127.0.0.0/8")
	_, other, _ := net.ParseCIDR("192.0.2.0/24")
	s.setLinks(map[int][]*net.IPNet{lo.Index: {loNet}})
	go s.serve(c)
	from, to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, uc.LocalAddr().(*net.UDPAddr)

	r := query(t, from, to, "garden.local.", 2*time.Second)
	if r == nil {
		t.Fatal("on-link query not answered")
	}
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.168.1.20" {
		t.Errorf("answer %v", r.Answer)
	}
	if r.Id != 4711 || len(r.Question) != 1 || r.Question[0].Name != "garden.local." {
		t.Errorf("legacy query (not from port 5353): response ID %d, question %v; want its ID and question back", r.Id, r.Question)
	}

	s.setLinks(map[int][]*net.IPNet{lo.Index: {other}})
	if r := query(t, from, to, "garden.local.", 300*time.Millisecond); r != nil {
		t.Errorf("off-link query answered: %v", r)
	}
	s.setLinks(map[int][]*net.IPNet{lo.Index + 1000: {loNet}})
	if r := query(t, from, to, "garden.local.", 300*time.Millisecond); r != nil {
		t.Errorf("query on-link only for another interface answered: %v", r)
	}
}

// Package mdns makes an appliance findable on the LAN by name: it answers
// multicast DNS (RFC 6762) for <hostname>.local with the device's
// addresses (A and AAAA) and announces Arka's web server through DNS-SD
// (RFC 6763) as _http._tcp and _https._tcp, so that browsers, phones and
// avahi-browse show it. The wire protocol is github.com/hashicorp/mdns's
// server; this package supplies the records (Zone) and keeps one server
// per network interface in step with the interfaces and their addresses
// (Responder), since a device's addresses come and go with DHCP and Wi-Fi.
package mdns

import (
	"fmt"
	"log"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	hmdns "github.com/hashicorp/mdns"
	"github.com/miekg/dns"
)

// Service is one DNS-SD service to announce.
type Service struct {
	Type string   // e.g. "_http._tcp"
	Port int      // e.g. 80
	TXT  []string // e.g. "path=/"
}

// Zone answers for one host name and its services.
type Zone struct {
	Hostname string // a single label, e.g. "arka" (answers for arka.local.)
	Instance string // service instance name, e.g. "arka" (one DNS label without spaces: hashicorp/mdns compares names unescaped)
	Services []Service

	mu   sync.Mutex
	ips  []net.IP
	svcs []*hmdns.MDNSService
}

// SetIPs sets the addresses the zone answers with.
func (z *Zone) SetIPs(ips []net.IP) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	var svcs []*hmdns.MDNSService
	for _, s := range z.Services {
		if len(ips) == 0 {
			break // nothing to answer with yet (DHCP)
		}
		m, err := hmdns.NewMDNSService(z.Instance, s.Type, "local.", z.Hostname+".local.", s.Port, ips, s.TXT)
		if err != nil {
			return err
		}
		svcs = append(svcs, m)
	}
	z.ips, z.svcs = ips, svcs
	return nil
}

// Records answers a question (hmdns.Zone).
func (z *Zone) Records(q dns.Question) []dns.RR {
	z.mu.Lock()
	svcs := z.svcs
	z.mu.Unlock()
	host := z.Hostname + ".local."
	if strings.EqualFold(q.Name, host) {
		if len(svcs) == 0 || (q.Qtype != dns.TypeA && q.Qtype != dns.TypeAAAA && q.Qtype != dns.TypeANY) {
			return nil
		}
		if q.Qtype == dns.TypeANY {
			var out []dns.RR
			out = append(out, svcs[0].Records(dns.Question{Name: host, Qtype: dns.TypeA, Qclass: q.Qclass})...)
			return append(out, svcs[0].Records(dns.Question{Name: host, Qtype: dns.TypeAAAA, Qclass: q.Qclass})...)
		}
		q.Name = host
		return svcs[0].Records(q) // every service knows the host; answer once
	}
	var out []dns.RR
	seen := map[string]bool{}
	for _, s := range svcs {
		for _, rr := range s.Records(q) {
			if k := rr.String(); !seen[k] {
				seen[k] = true
				out = append(out, rr)
			}
		}
	}
	return out
}

// Responder runs mDNS servers for a Zone on every interface that is up,
// multicast-capable and not loopback, and follows their addresses.
type Responder struct {
	Zone     *Zone
	Logf     func(format string, a ...any)
	Interval time.Duration // how often interfaces are looked at; default 5 s

	mu      sync.Mutex
	servers map[string]*hmdns.Server // by interface name
	key     string
	stop    chan struct{}
}

// Start begins answering; Stop ends it.
func (r *Responder) Start() {
	r.stop = make(chan struct{})
	r.servers = map[string]*hmdns.Server{}
	if r.Interval == 0 {
		r.Interval = 5 * time.Second
	}
	go func() {
		t := time.NewTicker(r.Interval)
		defer t.Stop()
		for {
			r.refresh()
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop shuts every server down.
func (r *Responder) Stop() {
	close(r.stop)
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, s := range r.servers {
		s.Shutdown()
		delete(r.servers, n)
	}
}

func (r *Responder) logf(format string, a ...any) {
	if r.Logf != nil {
		r.Logf(format, a...)
	}
}

// Interfaces returns the interfaces mDNS runs on and their addresses.
func Interfaces() (map[string][]net.IP, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := map[string][]net.IP{}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagMulticast == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				out[ifc.Name] = append(out[ifc.Name], ipn.IP)
			}
		}
	}
	return out, nil
}

func (r *Responder) refresh() {
	ifs, err := Interfaces()
	if err != nil {
		r.logf("mdns: %v", err)
		return
	}
	var names []string
	var ips []net.IP
	for n, a := range ifs {
		if len(a) > 0 {
			names = append(names, n)
		}
		ips = append(ips, a...)
	}
	sort.Strings(names)
	sort.Slice(ips, func(i, j int) bool { return ips[i].String() < ips[j].String() })
	key := fmt.Sprint(names, ips)
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == r.key {
		return
	}
	r.key = key
	if err := r.Zone.SetIPs(ips); err != nil {
		r.logf("mdns: %v", err)
		return
	}
	for n, s := range r.servers {
		s.Shutdown()
		delete(r.servers, n)
	}
	for _, n := range names {
		ifc, err := net.InterfaceByName(n)
		if err != nil {
			continue
		}
		s, err := hmdns.NewServer(&hmdns.Config{Zone: r.Zone, Iface: ifc, Logger: log.New(discard{}, "", 0)})
		if err != nil {
			r.logf("mdns: %s: %v", n, err)
			continue
		}
		r.servers[n] = s
	}
	if len(names) > 0 {
		r.logf("mdns: answering for %s.local on %s with %v", r.Zone.Hostname, strings.Join(names, ", "), ips)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

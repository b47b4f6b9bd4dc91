// Package mdns makes an appliance findable on the LAN by name: it answers
// multicast DNS (RFC 6762) for <hostname>.local with the device's
// addresses (A and AAAA) and announces Arka's web server through DNS-SD
// (RFC 6763) as _http._tcp and _https._tcp, so that browsers, phones and
// avahi-browse show it. The records come from github.com/hashicorp/mdns's
// services (Zone); the messages are github.com/miekg/dns's. Responder keeps
// one socket a family (IPv4, IPv6) on port 5353, joined to the mDNS group
// on every interface Links returns, in step with the interfaces and their
// addresses, since a device's addresses come and go with DHCP and Wi-Fi.
//
// Only the local link is answered (RFC 6762 section 11, and sections 5.5
// and 6.7 for unicast queries to port 5353): a query is answered only when
// its source address is link-local (169.254.0.0/16, fe80::/10) or within
// a prefix of an address of the interface it arrived on (e.g.
// 192.168.1.7 on an interface with 192.168.1.20/24). Everything else,
// queries routed in from other networks or the internet and queries from
// 127.0.0.1 or ::1, is dropped unanswered, so the responder
// neither tells the world its names and addresses nor amplifies spoofed
// queries. Answers go by unicast to the querier (ID 0, or for a legacy
// query, one not from port 5353, its ID and question).
package mdns

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hmdns "github.com/hashicorp/mdns"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
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

// Link is a network interface mDNS runs on.
type Link struct {
	Interface net.Interface
	Prefixes  []*net.IPNet // its addresses with their prefix lengths, e.g. 192.168.1.20/24, fe80::1/64
}

// Links returns the interfaces mDNS runs on: up, multicast-capable, not
// loopback and with at least one address, ordered by name.
func Links() ([]Link, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []Link
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagMulticast == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		l := Link{Interface: ifc}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				l.Prefixes = append(l.Prefixes, ipn)
			}
		}
		if len(l.Prefixes) > 0 {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Interface.Name < out[j].Interface.Name })
	return out, nil
}

// onLink reports whether a packet from src that arrived on an interface
// with the given prefixes comes from the local link (RFC 6762 section 11):
// src is link-local (169.254.0.0/16, fe80::/10) or within one of prefixes.
func onLink(src net.IP, prefixes []*net.IPNet) bool {
	if src.IsLinkLocalUnicast() {
		return true
	}
	for _, p := range prefixes {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// Responder answers mDNS for a Zone on every interface Links returns, and
// follows the interfaces and their addresses.
type Responder struct {
	Zone     *Zone
	Logf     func(format string, a ...any)
	Interval time.Duration // how often interfaces are looked at; default 5 s

	mu    sync.Mutex
	srv   *server
	conns []packetConn // one a family (IPv4, IPv6), joined on every link
	key   string
	stop  chan struct{}
}

// Start begins answering; Stop ends it.
func (r *Responder) Start() {
	r.stop = make(chan struct{})
	r.srv = &server{zone: r.Zone}
	r.srv.setLinks(nil)
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

// Stop closes the sockets.
func (r *Responder) Stop() {
	close(r.stop)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeConns()
}

func (r *Responder) closeConns() {
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func (r *Responder) logf(format string, a ...any) {
	if r.Logf != nil {
		r.Logf(format, a...)
	}
}

func (r *Responder) refresh() {
	links, err := Links()
	if err != nil {
		r.logf("mdns: %v", err)
		return
	}
	var names []string
	var ips []net.IP
	byIndex := map[int][]*net.IPNet{}
	for _, l := range links {
		names = append(names, l.Interface.Name)
		for _, p := range l.Prefixes {
			ips = append(ips, p.IP)
		}
		byIndex[l.Interface.Index] = l.Prefixes
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].String() < ips[j].String() })
	key := fmt.Sprint(links)
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.stop:
		return // stopped while Links ran
	default:
	}
	if key == r.key {
		return
	}
	r.key = key
	if err := r.Zone.SetIPs(ips); err != nil {
		r.logf("mdns: %v", err)
		return
	}
	r.srv.setLinks(byIndex)
	r.closeConns()
	for _, network := range []string{"udp4", "udp6"} {
		c, err := listen(network, links, r.logf)
		if err != nil {
			r.logf("mdns: %s: %v", network, err)
			continue
		}
		if c != nil {
			r.conns = append(r.conns, c)
			go r.srv.serve(c)
		}
	}
	if len(names) > 0 {
		r.logf("mdns: answering for %s.local on %s with %v", r.Zone.Hostname, strings.Join(names, ", "), ips)
	}
}

// The mDNS groups and port (RFC 6762 section 3).
var (
	group4 = net.IPv4(224, 0, 0, 251)
	group6 = net.ParseIP("ff02::fb")
)

const port = 5353

// listen opens network's ("udp4" or "udp6") socket on port 5353 and joins
// its mDNS group on every link with an address of that family; nil when
// no link has one.
func listen(network string, links []Link, logf func(string, ...any)) (packetConn, error) {
	group := group4
	if network == "udp6" {
		group = group6
	}
	var on []*net.Interface
	for i, l := range links {
		for _, p := range l.Prefixes {
			if (p.IP.To4() != nil) == (network == "udp4") {
				on = append(on, &links[i].Interface)
				break
			}
		}
	}
	if len(on) == 0 {
		return nil, nil
	}
	uc, err := net.ListenMulticastUDP(network, on[0], &net.UDPAddr{IP: group, Port: port})
	if err != nil {
		return nil, err
	}
	c, err := newPacketConn(uc)
	if err != nil {
		uc.Close()
		return nil, err
	}
	for _, ifc := range on[1:] {
		if err := c.joinGroup(ifc, &net.UDPAddr{IP: group}); err != nil {
			logf("mdns: %s: %v", ifc.Name, err)
		}
	}
	return c, nil
}

// packetConn is a UDP socket that tells on which interface (by index) a
// packet arrived: golang.org/x/net's ipv4 or ipv6 PacketConn. Answers
// are routed as any unicast (a link-local IPv6 source carries its zone).
type packetConn interface {
	readFrom(b []byte) (n, ifIndex int, src *net.UDPAddr, err error)
	writeTo(b []byte, dst *net.UDPAddr) error
	joinGroup(ifc *net.Interface, group net.Addr) error
	Close() error
}

// newPacketConn wraps c, which is bound to an IPv4 or an IPv6 address.
func newPacketConn(c *net.UDPConn) (packetConn, error) {
	if a, _ := c.LocalAddr().(*net.UDPAddr); a != nil && a.IP.To4() != nil {
		p := ipv4.NewPacketConn(c)
		return conn4{p}, p.SetControlMessage(ipv4.FlagInterface, true)
	}
	p := ipv6.NewPacketConn(c)
	return conn6{p}, p.SetControlMessage(ipv6.FlagInterface, true)
}

type conn4 struct{ *ipv4.PacketConn }

func (c conn4) readFrom(b []byte) (int, int, *net.UDPAddr, error) {
	n, cm, src, err := c.ReadFrom(b)
	a, _ := src.(*net.UDPAddr)
	if cm == nil {
		return n, 0, a, err
	}
	return n, cm.IfIndex, a, err
}

func (c conn4) writeTo(b []byte, dst *net.UDPAddr) error {
	_, err := c.WriteTo(b, nil, dst)
	return err
}

func (c conn4) joinGroup(ifc *net.Interface, g net.Addr) error { return c.JoinGroup(ifc, g) }

type conn6 struct{ *ipv6.PacketConn }

func (c conn6) readFrom(b []byte) (int, int, *net.UDPAddr, error) {
	n, cm, src, err := c.ReadFrom(b)
	a, _ := src.(*net.UDPAddr)
	if cm == nil {
		return n, 0, a, err
	}
	return n, cm.IfIndex, a, err
}

func (c conn6) writeTo(b []byte, dst *net.UDPAddr) error {
	_, err := c.WriteTo(b, nil, dst)
	return err
}

func (c conn6) joinGroup(ifc *net.Interface, g net.Addr) error { return c.JoinGroup(ifc, g) }

// maxMessage is the largest mDNS message, in bytes (RFC 6762 section 17).
const maxMessage = 9000

// server answers the queries that reach its sockets from the Zone.
type server struct {
	zone  *Zone
	links atomic.Pointer[map[int][]*net.IPNet] // each link's prefixes, by interface index
}

func (s *server) setLinks(m map[int][]*net.IPNet) { s.links.Store(&m) }

// serve answers the queries read from c until c is closed. A query is
// answered by unicast to its source, and only when its source is on the
// link it arrived on (onLink); others are dropped before parsing.
func (s *server) serve(c packetConn) {
	buf := make([]byte, maxMessage)
	for {
		n, ifIndex, src, err := c.readFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || src == nil || !onLink(src.IP, (*s.links.Load())[ifIndex]) {
			continue
		}
		var q dns.Msg
		if q.Unpack(buf[:n]) != nil {
			continue
		}
		r := s.answer(&q, src.Port != port)
		if r == nil {
			continue
		}
		if b, err := r.Pack(); err == nil {
			c.writeTo(b, src)
		}
	}
}

// answer returns the response to q, or nil when there is none. A legacy
// query, one not sent from port 5353, gets its ID and question back (RFC
// 6762 section 6.7); other responses carry ID 0 (section 18.1). Responses,
// and queries with a non-zero OPCODE or RCODE, are ignored (sections 18.3,
// 18.11).
func (s *server) answer(q *dns.Msg, legacy bool) *dns.Msg {
	if q.Response || q.Opcode != dns.OpcodeQuery || q.Rcode != dns.RcodeSuccess {
		return nil
	}
	r := &dns.Msg{Compress: true}
	r.Response, r.Authoritative = true, true
	for _, qu := range q.Question {
		r.Answer = append(r.Answer, s.zone.Records(qu)...)
	}
	if len(r.Answer) == 0 {
		return nil
	}
	if legacy {
		r.Id, r.Question = q.Id, q.Question
	}
	return r
}

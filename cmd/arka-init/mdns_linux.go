package main

import (
	"log"

	"github.com/arkaweb/arka/appliance/device/mdns"
)

// startMDNS answers multicast DNS for <hostname>.local and announces
// Arka's HTTP and HTTPS ports through DNS-SD (appliance/device/mdns), on every
// interface, following address changes (DHCP, Wi-Fi).
func startMDNS() {
	h := hostnameOf()
	if h == "" {
		return
	}
	z := &mdns.Zone{Hostname: h, Instance: h, Services: []mdns.Service{
		{Type: "_http._tcp", Port: 80, TXT: []string{"path=/"}},
		{Type: "_https._tcp", Port: 443, TXT: []string{"path=/"}},
	}}
	r := &mdns.Responder{Zone: z, Logf: log.Printf}
	r.Start()
}

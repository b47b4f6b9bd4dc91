package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"path/filepath"
	"strconv"
	"time"

	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/devices"
	"github.com/gokrazy/gokrazy"
)

// deviceTLSDir holds the device's own certificate for the web UI and the
// update/deploy API (generated at first boot; the key never leaves the
// device; clients pin it on first use).
const deviceTLSDir = "/perm/arka/device-tls"

// serveHTTPS serves gokrazy's web UI, update API and Arka's deploy API
// over HTTPS on gokrazy's HTTPS port (https-port.txt, /perm over /etc; 8443): a TLS
// front that passes each request, with its password, to gokrazy's Unix
// socket, where gokrazy checks the password and serves it. (gokrazy's own
// TLS listener would need the certificate in the read-only root file
// system, the same on every device built from one image.) Like gokrazy's
// own listeners it serves only connections to the device's private
// addresses (localOnly), with the limits of httpsAPILimits.
func serveHTTPS() {
	port := strconv.Itoa(devicePort(portDirs, "https-port.txt", 8443))
	dir := deviceTLSDir
	if err := writable(dir); err != nil {
		dir = filepath.Join(tmpArka, "device-tls")
		log.Printf("https: %v; the device certificate lives in memory and changes at every boot", err)
	}
	cert, err := devices.DeviceCert(dir, hostnameOf())
	if err != nil {
		log.Printf("https: device certificate: %v; the UI and update API stay on plain HTTP only", err)
		return
	}
	fp := "?"
	if len(cert.Certificate) > 0 {
		if c, err := parseLeaf(cert.Certificate[0]); err == nil {
			fp = devices.Fingerprint(c)
		}
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "gokrazy"
			r.SetXForwarded()
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ota.GokrazySocket)
		}},
		FlushInterval: -1, // logs stream as server-sent events
	}
	srv := newAPIServer(proxy, httpsAPILimits)
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	log.Printf("https: web UI, update and deploy API on :%s, device key SHA256 %s", port, fp)
	go func() {
		for {
			ln, err := net.Listen("tcp", ":"+port)
			if err == nil {
				err = srv.ServeTLS(limitConns(localOnly(ln, gokrazy.IsInPrivateNet), httpsAPILimits.MaxConns), "", "")
			}
			log.Printf("https: %v; retrying in 10 s", err)
			time.Sleep(10 * time.Second)
		}
	}()
}

func parseLeaf(der []byte) (*x509.Certificate, error) { return x509.ParseCertificate(der) }

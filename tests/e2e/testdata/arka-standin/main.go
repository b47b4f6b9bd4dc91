// Command arka-standin is a temporary stand-in for cmd/arka, used by the
// appliance tests only while cmd/arka has not landed on this branch. It
// reads the site directory given with -c just enough to serve the default
// site: listen, tls.listen, a static root and a status route.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/BurntSushi/toml"
)

var version = "standin"

type site struct {
	Listen []string `toml:"listen"`
	TLS    struct {
		Listen []string `toml:"listen"`
	} `toml:"tls"`
	Routes []struct {
		Path    string         `toml:"path"`
		Handler map[string]any `toml:"handler"`
	} `toml:"routes"`
}

func main() {
	conf := flag.String("c", "", "sites directory")
	state := flag.String("state", os.TempDir(), "state directory")
	flag.Parse()
	files, _ := filepath.Glob(filepath.Join(*conf, "*.toml"))
	if len(files) == 0 {
		log.Fatalf("no site files in %s", *conf)
	}
	var s site
	if _, err := toml.DecodeFile(files[0], &s); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range s.Routes {
		switch r.Handler["type"] {
		case "status":
			mux.HandleFunc(r.Path, func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintf(w, "{\"version\":%q}\n", version)
			})
		case "static":
			mux.Handle(r.Path, http.FileServer(http.Dir(r.Handler["root"].(string))))
		}
	}
	cert, err := selfSigned(*state)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range s.Listen {
		go func() { log.Fatal(http.ListenAndServe(a, mux)) }()
	}
	for _, a := range s.TLS.Listen {
		go func() {
			srv := &http.Server{Addr: a, Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
			log.Fatal(srv.ListenAndServeTLS("", ""))
		}()
	}
	select {}
}

func selfSigned(dir string) (tls.Certificate, error) {
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if c, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "arka"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0), DNSNames: []string{"arka"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}

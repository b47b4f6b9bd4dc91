package harness

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Content is the benchmark's content, generated deterministically: the
// same bytes on every machine and every run (the certificate excepted).
type Content struct {
	Page    []byte // /index.html, a small HTML page (~1.5 KB)
	Script  []byte // /app.js, ~285 KB of JavaScript
	Binary  []byte // /1mb.bin, 1 MiB of pseudo-random bytes
	PHPTiny []byte // output of /app/tiny.php
	PHPPage []byte // output of /app/page.php (~25 KB of HTML)
	Small   []byte // the upstream's /small (proxy tests)
	Big     []byte // the upstream's /30k (proxy tests, 30 KB of HTML)

	// Precompressed siblings written next to the page and the script,
	// keyed by file name ("index.html.br").
	Siblings map[string][]byte
}

// Paths of the test files under the document root and the upstream.
const (
	PagePath    = "/index.html"
	ScriptPath  = "/app.js"
	BinaryPath  = "/1mb.bin"
	PHPTinyPath = "/app/tiny.php"
	PHPPagePath = "/app/page.php"
	SmallPath   = "/small"
	BigPath     = "/30k"
)

// seed fixes the pseudo-random generator: change it and every file changes.
var seed = [32]byte{'a', 'r', 'k', 'a', '-', 'b', 'e', 'n', 'c', 'h'}

// NewContent generates the content (pure: no files are written).
func NewContent() *Content {
	rng := mrand.New(mrand.NewChaCha8(seed))
	c := &Content{
		Page:     page(),
		Script:   script(rng, 285*1024),
		Binary:   binary(rng, 1<<20),
		PHPTiny:  []byte(phpTinyOutput),
		PHPPage:  phpPageOutput(),
		Small:    upstreamSmall(),
		Big:      upstreamBig(30 * 1024),
		Siblings: map[string][]byte{},
	}
	return c
}

// WriteWWW writes the document root: the files, their precompressed
// siblings (brotli at its highest level, gzip level 9, zstd at its best
// level) and the PHP scripts. Directories are world-readable so that
// worker processes running as another user (see Layout.RunAs) can read them.
func (c *Content) WriteWWW(www string) error {
	files := map[string][]byte{
		PagePath:    c.Page,
		ScriptPath:  c.Script,
		BinaryPath:  c.Binary,
		PHPTinyPath: []byte(phpTinySource),
		PHPPagePath: []byte(phpPageSource()),
	}
	for _, name := range []string{PagePath, ScriptPath} {
		data := files[name]
		br, err := compressBrotli(data)
		if err != nil {
			return err
		}
		gz, err := compressGzip(data)
		if err != nil {
			return err
		}
		zs, err := compressZstd(data)
		if err != nil {
			return err
		}
		for ext, b := range map[string][]byte{".br": br, ".gz": gz, ".zst": zs} {
			c.Siblings[strings.TrimPrefix(name, "/")+ext] = b
			files[name+ext] = b
		}
	}
	for name, data := range files {
		p := filepath.Join(www, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		// One modification time for every file: written in map order, a
		// sibling could be older than its file, and Arka ignores those.
		if err := os.Chtimes(p, filesTime, filesTime); err != nil {
			return err
		}
	}
	return nil
}

// Sibling returns the precompressed sibling of a path ("/app.js", "br").
func (c *Content) Sibling(path, coding string) []byte {
	ext := map[string]string{"br": ".br", "gzip": ".gz", "zstd": ".zst"}[coding]
	return c.Siblings[strings.TrimPrefix(path, "/")+ext]
}

func compressBrotli(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := brotli.NewWriterLevel(&buf, brotli.BestCompression)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func compressGzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func compressZstd(b []byte) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil), nil
}

// page is a small but complete HTML page, about 1.5 KB.
func page() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Arka benchmark: a small page</title>
<link rel="stylesheet" href="/style.css">
<script src="/app.js" defer></script>
</head>
<body>
<header><nav><a href="/">Home</a> <a href="/docs/">Documentation</a> <a href="/blog/">Blog</a> <a href="/about/">About</a></nav></header>
<main>
<h1>A small page</h1>
<p>This page stands for the small HTML documents that make up most of a web
site: a header, a few paragraphs and links, a footer. Every server in the
benchmark sends the same bytes, from the same directory.</p>
`)
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&b, "<section id=\"s%d\"><h2>Section %d</h2><p>Paragraph %d of the page, with a <a href=\"/docs/%d/\">link to part %d</a> of the documentation.</p></section>\n", i, i, i, i, i)
	}
	b.WriteString(`</main>
<footer><p>Served by the web server under test. No cookies, no tracking.</p></footer>
</body>
</html>
`)
	return []byte(b.String())
}

// script is JavaScript-like source of exactly n bytes, with the statistics
// of a real bundle (identifiers from a vocabulary, numbers, strings), so
// that it compresses about as well as one.
func script(rng *mrand.Rand, n int) []byte {
	words := strings.Fields(`state props items list node value index key render update
		create element children parent value count total price name title label button
		input form submit event handler target style class width height offset scroll
		request response fetch json data error result cache store action dispatch
		reducer selector effect memo ref context theme layout header footer section
		modal dialog toast tooltip popover menu option select filter sort page limit`)
	id := func() string {
		w := words[rng.IntN(len(words))]
		if rng.IntN(3) == 0 {
			w2 := words[rng.IntN(len(words))]
			w += strings.ToUpper(w2[:1]) + w2[1:]
		}
		if rng.IntN(4) == 0 {
			w += fmt.Sprint(rng.IntN(100))
		}
		return w
	}
	var b strings.Builder
	b.WriteString("/*! bench bundle: generated, deterministic */\n\"use strict\";\n")
	for fn := 0; b.Len() < n; fn++ {
		name := id()
		a1, a2 := id(), id()
		fmt.Fprintf(&b, "function %s_%d(%s, %s) {\n", name, fn, a1, a2)
		for s := 0; s < 3+rng.IntN(6); s++ {
			switch rng.IntN(6) {
			case 0:
				fmt.Fprintf(&b, "  var %s = %s.%s.filter(function (x) { return x.%s !== %s.%s; });\n", id(), a1, id(), id(), a2, id())
			case 1:
				fmt.Fprintf(&b, "  if (%s.%s > %d) { return %s(%q, { className: %q }, %s); }\n", a1, id(), rng.IntN(1000), id(), words[rng.IntN(len(words))], id()+"-"+id(), a2)
			case 2:
				fmt.Fprintf(&b, "  %s.%s = %s.%s || %d;\n", a2, id(), a1, id(), rng.IntN(65536))
			case 3:
				fmt.Fprintf(&b, "  for (var i = 0; i < %s.length; i++) { %s(%s[i], %q); }\n", a1, id(), a1, id())
			case 4:
				fmt.Fprintf(&b, "  var %s = \"%x\";\n", id(), rng.Uint64())
			default:
				fmt.Fprintf(&b, "  %s.%s(%s, function (err, %s) { if (err) { throw err; } %s = %s; });\n", a1, id(), a2, id(), id(), id())
			}
		}
		fmt.Fprintf(&b, "  return %s;\n}\n", a1)
	}
	s := b.String()[:n-1] + "\n"
	return []byte(s)
}

func binary(rng *mrand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

const phpTinySource = "<?php\necho \"Hello from PHP\\n\";\n"
const phpTinyOutput = "Hello from PHP\n"

const phpPageRows = 180

const phpPageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Orders - a page made by PHP</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
td, th { border-bottom: 1px solid #ddd; padding: .3rem .6rem; text-align: left; }
td.amount { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<header><nav><a href="/">Home</a> <a href="/orders/">Orders</a> <a href="/customers/">Customers</a></nav></header>
<main>
<h1>Orders</h1>
<table>
<thead><tr><th>#</th><th>Order</th><th>Customer</th><th>Amount</th><th>Status</th></tr></thead>
<tbody>
`

const phpPageTail = `</tbody>
</table>
</main>
<footer><p>Made by PHP for every request.</p></footer>
</body>
</html>
`

var phpStatuses = []string{"shipped", "paid", "pending", "delivered", "returned"}

// phpPageSource is a PHP script printing phpPageOutput: a template head, a
// loop of table rows, a tail, like a small application page (~25 KB).
func phpPageSource() string {
	return "<?php\n" +
		"// A page made by PHP for every request: a table of orders.\n" +
		"$statuses = ['" + strings.Join(phpStatuses, "', '") + "'];\n" +
		"echo '" + phpPageHead + "';\n" +
		"for ($i = 1; $i <= " + fmt.Sprint(phpPageRows) + "; $i++) {\n" +
		"    $n = ($i * 7919) % 10007;\n" +
		"    echo '<tr><td>', $i, '</td><td><a href=\"/orders/', $n, '\">Order ', $n, '</a></td><td>Customer ', $n % 113, '</td><td class=\"amount\">', intdiv($n, 37), '.', sprintf('%02d', $n % 100), ' EUR</td><td>', $statuses[$n % 5], \"</td></tr>\\n\";\n" +
		"}\n" +
		"echo '" + phpPageTail + "';\n"
}

func phpPageOutput() []byte {
	var b strings.Builder
	b.WriteString(phpPageHead)
	for i := 1; i <= phpPageRows; i++ {
		n := (i * 7919) % 10007
		fmt.Fprintf(&b, "<tr><td>%d</td><td><a href=\"/orders/%d\">Order %d</a></td><td>Customer %d</td><td class=\"amount\">%d.%02d EUR</td><td>%s</td></tr>\n",
			i, n, n, n%113, n/37, n%100, phpStatuses[n%5])
	}
	b.WriteString(phpPageTail)
	return []byte(b.String())
}

func upstreamSmall() []byte {
	return []byte("<!DOCTYPE html>\n<html><head><title>upstream</title></head><body><p>A small answer from the upstream.</p></body></html>\n")
}

// upstreamBig is an HTML page of about n bytes.
func upstreamBig(n int) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><title>upstream: 30 KB</title></head><body>\n<ul>\n")
	for i := 1; b.Len() < n-64; i++ {
		fmt.Fprintf(&b, "<li id=\"item-%d\"><a href=\"/items/%d\">Item %d</a>: %d in stock</li>\n", i, i, i, (i*31)%97)
	}
	b.WriteString("</ul>\n</body></html>\n")
	return []byte(b.String())
}

// WriteCert writes a self-signed ECDSA P-256 certificate for 127.0.0.1,
// ::1, localhost and bench.local, valid for a year, shared by every server.
func WriteCert(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "bench.local", Organization: []string{"arkabench"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"bench.local", "localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(certPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	// Readable by the servers' workers (see Layout.RunAs); it is a
	// throw-away key for loopback only.
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o644)
}

// filesTime is the modification time given to every generated file.
var filesTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

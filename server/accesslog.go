package server

import (
	"bufio"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/realip"
)

// logSink is one access-log destination, shared by every site that names
// the same path. Lines go through a 64 KiB buffer flushed every second and
// on shutdown: an SD card is not asked to write (or fsync) per line.
type logSink struct {
	path string
	mu   sync.Mutex
	f    *os.File // nil for standard output
	w    *bufio.Writer
}

func openSink(path string) (*logSink, error) {
	s := &logSink{path: path}
	if err := s.reopen(); err != nil {
		return nil, err
	}
	return s, nil
}

// reopen opens the file again (after rotation by logrotate and SIGHUP).
func (s *logSink) reopen() error {
	if s.path == "" || s.path == "-" {
		s.mu.Lock()
		if s.w == nil {
			s.w = bufio.NewWriterSize(os.Stdout, 64<<10)
		}
		s.mu.Unlock()
		return nil
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		s.w.Flush()
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f = f
	s.w = bufio.NewWriterSize(f, 64<<10)
	return nil
}

func (s *logSink) write(line []byte) {
	s.mu.Lock()
	s.w.Write(line)
	s.mu.Unlock()
}

func (s *logSink) flush() {
	s.mu.Lock()
	s.w.Flush()
	s.mu.Unlock()
}

func (s *logSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Flush()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// accessLog formats lines for one site.
type accessLog struct {
	sink *logSink
	json bool
	// trusted are the proxies whose forwarding fields name the client
	// (realip.Client): the site's trusted_proxies and its proxy routes'.
	trusted []netip.Prefix
	field   config.ClientIPHeader // the site's client_ip_header
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// log writes one line. Combined format (Apache's and nginx's):
//
//	127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 2326 "referer" "agent"
//
// remote is the client: behind a trusted proxy the one it forwarded for.
// JSON: one object per line with time, remote, peer (the direct peer), host, method, uri, proto,
// status, bytes, duration_ms, referer, user_agent and request_id.
// Client-controlled text is escaped, so a request cannot forge log lines.
func (l *accessLog) log(r *http.Request, status int, n int64, start time.Time, d time.Duration, reqID string) {
	bp := lineBufs.Get().(*[]byte)
	b := (*bp)[:0]
	// remote is the client, as a proxy route would forward it; peer the
	// address the connection came from.
	peer := realip.Peer(r.RemoteAddr)
	remote := realip.Client(r.RemoteAddr, r.Header, l.trusted, l.field)
	if l.json {
		b = append(b, `{"time":"`...)
		b = start.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, `","remote":`...)
		b = appendJSON(b, remote)
		b = append(b, `,"peer":`...)
		b = appendJSON(b, peer)
		b = append(b, `,"host":`...)
		b = appendJSON(b, r.Host)
		b = append(b, `,"method":`...)
		b = appendJSON(b, r.Method)
		b = append(b, `,"uri":`...)
		b = appendJSON(b, r.RequestURI)
		b = append(b, `,"proto":`...)
		b = appendJSON(b, r.Proto)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendFloat(b, float64(d)/1e6, 'f', 3, 64)
		b = append(b, `,"referer":`...)
		b = appendJSON(b, r.Header.Get("Referer"))
		b = append(b, `,"user_agent":`...)
		b = appendJSON(b, r.Header.Get("User-Agent"))
		if reqID != "" {
			b = append(b, `,"request_id":`...)
			b = appendJSON(b, reqID)
		}
		b = append(b, "}\n"...)
	} else {
		b = appendEscaped(b, remote)
		b = append(b, " - - ["...)
		b = start.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		b = append(b, `] "`...)
		b = appendEscaped(b, r.Method)
		b = append(b, ' ')
		b = appendEscaped(b, r.RequestURI)
		b = append(b, ' ')
		b = appendEscaped(b, r.Proto)
		b = append(b, `" `...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, ' ')
		if n > 0 {
			b = strconv.AppendInt(b, n, 10)
		} else {
			b = append(b, '-')
		}
		b = append(b, ` "`...)
		b = appendEscaped(b, r.Header.Get("Referer"))
		b = append(b, `" "`...)
		b = appendEscaped(b, r.Header.Get("User-Agent"))
		b = append(b, "\"\n"...)
	}
	l.sink.write(b)
	*bp = b
	lineBufs.Put(bp)
}

// appendEscaped writes s with quotes, backslashes, control bytes and bytes
// from 0x7f up (C1 controls and bytes that are not UTF-8 included) as
// \xHH, as nginx does, and "-" for an empty value.
func appendEscaped(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b = append(b, '\\', 'x', hexd[c>>4], hexd[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// appendJSON writes s as a JSON string (RFC 8259), replacing invalid UTF-8.
func appendJSON(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r <= 0x9f:
			// C1 controls (U+0080..U+009F): escaped like C0, so that a
			// log read on a terminal cannot be driven by a request.
			b = append(b, '\\', 'u', '0', '0', hexd[r>>4], hexd[r&15])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

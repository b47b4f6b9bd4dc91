package phpfpm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/arkaweb/arka/internal/fcgi"
)

// Pool is php-fpm's own view of its pool, from its status page
// (pm.status_path, JSON form).
type Pool struct {
	Name               string `json:"pool"`
	ProcessManager     string `json:"process manager"`
	StartSince         int64  `json:"start since"` // seconds
	AcceptedConn       uint64 `json:"accepted conn"`
	ListenQueue        int    `json:"listen queue"`
	MaxListenQueue     int    `json:"max listen queue"`
	ListenQueueLen     int    `json:"listen queue len"`
	IdleProcesses      int    `json:"idle processes"`
	ActiveProcesses    int    `json:"active processes"`
	TotalProcesses     int    `json:"total processes"`
	MaxActiveProcesses int    `json:"max active processes"`
	MaxChildrenReached uint64 `json:"max children reached"`
	SlowRequests       uint64 `json:"slow requests"`
}

// statusTTL is how long a status reading is reused: the status page and
// the 10-second history sampler may both ask at once.
const statusTTL = time.Second

type statusCache struct {
	mu  sync.Mutex
	at  time.Time
	p   Pool
	err error
}

// Pool reads the pool's state from php-fpm's status page, over FastCGI on
// the status socket (pm.status_listen: a pool of its own inside php-fpm,
// so the answer does not wait for a busy worker). A reading is reused for
// a second.
func (s *Supervisor) Pool() (Pool, error) {
	s.status.mu.Lock()
	defer s.status.mu.Unlock()
	if time.Since(s.status.at) < statusTTL {
		return s.status.p, s.status.err
	}
	p, err := QueryStatus("unix", s.c.statusSock(), StatusPath, time.Second)
	s.status.at, s.status.p, s.status.err = time.Now(), p, err
	return p, err
}

// QueryStatus fetches php-fpm's status page at path (?json) from a
// FastCGI address, using the FastCGI record codec of internal/fcgi.
// timeout bounds the whole exchange.
func QueryStatus(network, address, path string, timeout time.Duration) (Pool, error) {
	var p Pool
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return p, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var pw fcgi.ParamsWriter
	pw.Begin(fcgi.AppendBeginRequest(nil, 1, fcgi.RoleResponder, 0), 1)
	for _, kv := range [][2]string{
		{"GATEWAY_INTERFACE", "CGI/1.1"}, {"REQUEST_METHOD", "GET"},
		{"SCRIPT_NAME", path}, {"SCRIPT_FILENAME", path}, {"REQUEST_URI", path + "?json"},
		{"QUERY_STRING", "json"}, {"SERVER_PROTOCOL", "HTTP/1.1"},
	} {
		pw.Add(kv[0], kv[1])
	}
	req := fcgi.AppendHeader(pw.End(), fcgi.TypeStdin, 1, 0, 0)
	if _, err := c.Write(req); err != nil {
		return p, err
	}
	rd := fcgi.NewReader(bufio.NewReader(c))
	var out []byte
	buf := make([]byte, fcgi.MaxContent)
	for {
		h, err := rd.Next()
		if err != nil {
			return p, fmt.Errorf("php-fpm status: %v", err)
		}
		switch h.Type {
		case fcgi.TypeStdout:
			b, err := rd.ReadContent(buf)
			if err != nil {
				return p, err
			}
			if len(out)+len(b) > 1<<20 {
				return p, errors.New("php-fpm status: answer too large")
			}
			out = append(out, b...)
		case fcgi.TypeEndRequest:
			_, body, ok := bytes.Cut(out, []byte("\r\n\r\n"))
			if !ok {
				return p, fmt.Errorf("php-fpm status: no CGI header in %q", truncate(out))
			}
			if err := json.Unmarshal(body, &p); err != nil {
				return p, fmt.Errorf("php-fpm status: %v in %q", err, truncate(body))
			}
			return p, nil
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

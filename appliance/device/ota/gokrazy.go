package ota

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// GokrazySocket is the Unix socket on which gokrazy's init serves its web
// UI and update API to local processes, without a password.
const GokrazySocket = "/run/gokrazy-http.sock"

// Gokrazy calls gokrazy's web UI over its Unix socket (arka-init talks to
// the gokrazy code running in its own process this way, as any local
// program would). The socket, too, wants the web UI password when the
// image has one.
type Gokrazy struct {
	Socket   string // default GokrazySocket
	Password string // see GokrazyPassword
	client   *http.Client
}

// GokrazyPassword reads the web UI password the way gokrazy does: the
// first of /perm/gokr-pw.txt, /etc/gokr-pw.txt and /gokr-pw.txt, trimmed.
func GokrazyPassword() string {
	for _, p := range []string{"/perm/gokr-pw.txt", "/etc/gokr-pw.txt", "/gokr-pw.txt"} {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

func (g *Gokrazy) do(ctx context.Context, method, path string, form url.Values, accept string, timeout time.Duration) ([]byte, error) {
	if g.client == nil {
		sock := g.Socket
		if sock == "" {
			sock = GokrazySocket
		}
		g.client = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
			DisableKeepAlives: true,
		}}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gokrazy"+path, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if g.Password != "" {
		req.SetBasicAuth("gokrazy", g.Password)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// Testboot is POST /update/testboot: the next boot trials the inactive root.
func (g *Gokrazy) Testboot(ctx context.Context) error {
	_, err := g.do(ctx, "POST", "/update/testboot", nil, "", 30*time.Second)
	return err
}

// Reboot is POST /reboot: gokrazy stops the supervised programs (SIGTERM,
// then SIGKILL after waitPerSignal), unmounts /perm and reboots (kexec on
// amd64) a second after it answers.
func (g *Gokrazy) Reboot(ctx context.Context, waitPerSignal time.Duration) error {
	form := url.Values{"wait_per_signal": {waitPerSignal.String()}}
	_, err := g.do(ctx, "POST", "/reboot", form, "", 2*waitPerSignal+30*time.Second)
	return err
}

// Process returns the supervisor's view of the program at path (for
// example "/user/arka"): GET /status?path=… as JSON.
func (g *Gokrazy) Process(ctx context.Context, path string) (Process, error) {
	b, err := g.do(ctx, "GET", "/status?path="+url.QueryEscape(path), nil, "application/json", 5*time.Second)
	if err != nil {
		return Process{}, err
	}
	var st struct {
		Stopped   bool
		StartTime time.Time
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return Process{}, err
	}
	return Process{Started: st.StartTime, Stopped: st.Stopped}, nil
}

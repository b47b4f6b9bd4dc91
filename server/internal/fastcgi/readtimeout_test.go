package fastcgi

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// pause.php writes n lines ms milliseconds apart, each the time
// (microtime, seconds) just before it was flushed to php-fpm's socket,
// then is silent for s milliseconds and writes "end".
const pauseScript = `<?php
header('Content-Type: text/plain');
$n = (int)($_GET['n'] ?? 0);
for ($i = 0; $i < $n; $i++) {
  if ($i > 0) usleep((int)$_GET['ms'] * 1000);
  printf("%.6f\n", microtime(true));
  flush();
}
usleep((int)($_GET['s'] ?? 0) * 1000);
echo "end\n";
`

// TestReadTimeoutTiming: read_timeout is the longest silence of php-fpm
// between two reads (nginx's fastcgi_read_timeout), measured from both
// sides: a script silent from the start gets 504 no sooner than
// read_timeout after the request was sent and no later than an eighth of
// it more (the request's wait for the answer once took a whole second
// read_timeout: 504 after twice the value); a script that goes silent
// after some output is cut off no sooner than read_timeout after its last
// output left it (the deadline, moved forward only once per eighth of
// read_timeout, once fired up to that much early) and no later than an
// eighth more; and a script whose output never pauses for read_timeout
// runs to its end, however long that takes.
func TestReadTimeoutTiming(t *testing.T) {
	const timeout = 2 * time.Second
	const slack = timeout / 8
	e := newEnv(t, fpmtest.Config{MaxChildren: 4})
	fpmtest.WriteFiles(t, e.root, map[string]string{"app/pause.php": pauseScript})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.ReadTimeout = config.Duration(timeout)
	})
	p := protos(t, h)[0] // the timing is the handler's, whatever the protocol

	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		res, _ := get(t, p.client, p.url+"/app/pause.php?s=6000")
		d := time.Since(start)
		t.Logf("504 after %v", d)
		if res.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("%d after %v, want 504", res.StatusCode, d)
		}
		// The client starts before the request is sent and sees the
		// answer after the handler wrote it: the server's wait lies
		// within d, and d within the server's wait plus delivery.
		if d < timeout || d > timeout+slack {
			t.Errorf("504 after %v, want %v to %v", d, timeout, timeout+slack)
		}
	})

	t.Run("pause", func(t *testing.T) {
		t.Parallel()
		res, err := p.client.Get(p.url + "/app/pause.php?n=11&ms=100&s=6000")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		var last float64 // when the script wrote its last line
		lines := 0
		br := bufio.NewReader(res.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				cut := float64(time.Now().UnixMicro()) / 1e6
				if err == io.EOF || lines != 11 {
					t.Fatalf("after %d lines: %v, want the response cut off after 11", lines, err)
				}
				// The script wrote its last line before Arka read it,
				// and the client sees the cut after Arka made it.
				silence := time.Duration((cut - last) * float64(time.Second))
				t.Logf("cut off %v after the last output (%v)", silence, err)
				if silence < timeout || silence > timeout+slack {
					t.Errorf("cut off %v after the script's last output, want %v to %v", silence, timeout, timeout+slack)
				}
				return
			}
			if line == "end\n" {
				t.Fatal("the script ran to its end after 6 s of silence")
			}
			f, perr := strconv.ParseFloat(strings.TrimSpace(line), 64)
			if perr != nil {
				t.Fatalf("line %q", line)
			}
			last = f
			lines++
		}
	})

	t.Run("drip", func(t *testing.T) {
		t.Parallel()
		// Output every 3/4 of read_timeout, 2.25 times read_timeout in all.
		start := time.Now()
		res, body := get(t, p.client, p.url+"/app/pause.php?n=4&ms="+strconv.Itoa(int(timeout*3/4/time.Millisecond)))
		d := time.Since(start)
		if res.StatusCode != 200 || strings.Count(body, "\n") != 5 || !strings.HasSuffix(body, "end\n") {
			t.Errorf("after %v: %d %q, want 200 and the whole output", d, res.StatusCode, body)
		}
		if d < timeout*9/4 {
			t.Errorf("done after %v, before the script could have", d)
		}
	})
}

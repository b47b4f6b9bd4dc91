package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/integration/harness"
)

const phpSite = `listen = ["HTTPADDR"]
php = { fpm = "FPM", max_requests = 200, ini = { "date.timezone" = "Europe/Berlin" } }
[global.budget]
php_max_children = 3
php_pm = "static"
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "fastcgi", root = "ROOT/www" }
`

// TestOwnPHPFPM runs arka with php = { fpm = ... }: Arka starts Debian's
// php-fpm with its own configuration, serves PHP through it, shows the
// pool on the status page, restarts php-fpm after kill -9 while static
// files keep being served, and stops it (socket and processes gone) on
// shutdown.
func TestOwnPHPFPM(t *testing.T) {
	bin, err := fpmtest.Binary()
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	os.Chmod(root, 0o755) // the workers run as nobody when the test runs as root
	os.Chmod(filepath.Dir(root), 0o755)
	fpmtest.WriteFiles(t, root, map[string]string{
		"www/index.php": `<?php echo "php ", PHP_VERSION, " tz=", date_default_timezone_get(), " data=", getenv("ARKA_PHP_DATA"), " max_requests=", 1, "\n";`,
		"www/hello.txt": "static hello\n",
	})
	state := filepath.Join(root, "state")
	httpAddr := harness.FreeAddr(t)
	site := filepath.Join(root, "site.toml")
	src := strings.NewReplacer("ROOT", root, "HTTPADDR", httpAddr, "FPM", bin).Replace(phpSite)
	if err := os.WriteFile(site, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := harness.Run(t, "-t", "-c", site, "-state", t.TempDir()); code != 0 {
		t.Fatalf("arka -t: %d\n%s", code, out)
	}
	p := harness.Start(t, nil, []string{"-c", site, "-state", state}, httpAddr)
	base := "http://" + httpAddr
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/index.php")
	if code != 200 || !strings.HasPrefix(body, "php 8.") || !strings.Contains(body, "tz=Europe/Berlin") ||
		!strings.Contains(body, "data="+filepath.Join(state, "php", "data")) {
		t.Fatalf("GET /index.php: %d %q", code, body)
	}

	// The status page: php-fpm's own view and the FastCGI pool sized to it.
	var st struct {
		FastCGI []struct {
			Address  string `json:"address"`
			MaxConns int    `json:"max_conns"`
		} `json:"fastcgi"`
		PHPFPM []struct {
			Pool        string `json:"pool"`
			MaxChildren int    `json:"max_children"`
			Active      int    `json:"active_processes"`
			Idle        int    `json:"idle_processes"`
		} `json:"phpfpm"`
	}
	code, body = get("/status?format=json")
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("status: %d %v %.300s", code, err, body)
	}
	sock := filepath.Join(state, "php", "run", "php-fpm.sock")
	if len(st.FastCGI) != 1 || st.FastCGI[0].Address != "unix:"+sock || st.FastCGI[0].MaxConns != 3 {
		t.Errorf("status fastcgi: %+v, want one pool on %s with max_conns 3 (pm.max_children)", st.FastCGI, sock)
	}
	if len(st.PHPFPM) != 1 || st.PHPFPM[0].Pool != "arka" || st.PHPFPM[0].MaxChildren != 3 {
		t.Errorf("status phpfpm: %+v", st.PHPFPM)
	}
	if code, body := get("/status"); code != 200 || !strings.Contains(body, "php-fpm") {
		t.Errorf("status page has no php-fpm section: %d", code)
	}

	// kill -9 of php-fpm's master: Arka restarts it; static files keep
	// being served meanwhile; PHP answers again.
	pidFile := filepath.Join(state, "php", "run", "php-fpm.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/hello.txt"); code != 200 || body != "static hello\n" {
		t.Errorf("static file while php-fpm restarts: %d %q", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _ := get("/index.php"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("PHP did not answer again after kill -9 of php-fpm")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.WaitOutput(t, "php-fpm is serving again")
	b, _ = os.ReadFile(pidFile)
	newPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if newPid == pid || newPid == 0 {
		t.Errorf("php-fpm pid %d after restart (was %d)", newPid, pid)
	}

	// Shutdown: php-fpm's processes and socket are gone.
	if err := p.Stop(t); err != nil {
		t.Errorf("arka exit: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket %s still exists after shutdown (%v)", sock, err)
	}
	for _, pid := range []int{pid, newPid} {
		if alive(pid) {
			t.Errorf("php-fpm process %d still runs after arka stopped", pid)
		}
	}
	if !strings.Contains(p.Output(), "php-fpm stopped") {
		t.Errorf("arka did not log stopping php-fpm")
	}
}

// alive reports whether a process with the pid runs (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

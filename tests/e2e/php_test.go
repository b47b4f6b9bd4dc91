package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/build/phpimage"
	"github.com/arkaweb/arka/appliance/build/vm"
)

const phpSiteFile = `# A PHP site on /perm, served by the php-fpm in the image.
default = true
listen = [":80"]
php = { fpm = "auto" }
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "fastcgi", root = "/perm/arka/www" }
`

// The page keeps notes in a SQLite database in PHP's data directory on
// /perm, and reports what it runs as and php-fpm's memory.
const phpNotes = `<?php
$db = new PDO('sqlite:' . getenv('ARKA_PHP_DATA') . '/notes.sqlite');
$db->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);
$db->exec('CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, note TEXT)');
if (isset($_GET['note'])) {
    $db->prepare('INSERT INTO notes (note) VALUES (?)')->execute([$_GET['note']]);
}
$notes = $db->query('SELECT note FROM notes ORDER BY id')->fetchAll(PDO::FETCH_COLUMN);
echo 'php ', PHP_VERSION, ' uid ', posix_geteuid(), ' opcache ', (int)opcache_get_status(false)['opcache_enabled'],
    ' mb ', mb_strlen('äöü'), ' notes: ', implode(',', $notes), "\n";
`

// rss.php sums the resident memory of php-fpm's processes (master and
// workers, this one included) from /proc.
const phpRSS = `<?php
$n = 0; $kb = 0;
foreach (glob('/proc/[0-9]*/status') as $f) {
    $s = @file_get_contents($f);
    if ($s === false || !preg_match('/^Name:\s+php-fpm/m', $s)) continue;
    if (preg_match('/^VmRSS:\s+(\d+) kB/m', $s, $m)) { $n++; $kb += (int)$m[1]; }
}
echo "$n processes $kb kB\n";
`

// TestAmd64PHP builds the amd64 image with PHP (make image PHP=1), boots
// it with a PHP site on /perm, and checks that a page writes to and reads
// from a SQLite database under /perm, across a reboot.
func TestAmd64PHP(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU: skipped with -short")
	}
	root := moduleRoot(t)
	bd, err := image.LoadBoard("amd64")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.CheckTools(bd); err != nil {
		t.Skip(err)
	}
	if err := phpimage.CheckTools(); err != nil {
		t.Skip(err)
	}
	if err := vm.Available("amd64"); err != nil {
		t.Skipf("QEMU cannot run here: %v", err)
	}
	start := time.Now()
	php, err := phpimage.Collect(phpimage.Options{Arch: "amd64", CacheDir: filepath.Join(root, "images", "out", "debs"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "arka-amd64-php.img")
	sum, err := image.Build(image.Config{
		Board: bd, Output: img, ModuleDir: root, Version: "e2e-php", SourceDateEpoch: 1764441516,
		ExtraFiles: php.Files,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built amd64 with PHP in %s: root %.1f MiB", time.Since(start).Round(time.Millisecond), float64(sum.RootUsed)/(1<<20))
	putOnPerm(t, img, "arka/sites/php.toml", phpSiteFile)
	putOnPerm(t, img, "arka/www/index.php", phpNotes)
	putOnPerm(t, img, "arka/www/rss.php", phpRSS)

	v := boot(t, vm.Options{Board: "amd64", Image: img})
	base := fmt.Sprintf("http://127.0.0.1:%d", v.Ports[80])
	took := waitHTTP(t, v, base+"/")
	t.Logf("boot to first PHP response: %s", took.Round(100*time.Millisecond))

	code, body := get(t, plain, base+"/?note=before-reboot", "", "", nil)
	if code != 200 || !strings.HasPrefix(body, "php 8.2") || !strings.Contains(body, "notes: before-reboot\n") ||
		!strings.Contains(body, " uid 65534 ") || !strings.Contains(body, " opcache 1 ") || !strings.Contains(body, " mb 3 ") {
		t.Fatalf("GET /?note=before-reboot: %d %q", code, body)
	}
	time.Sleep(2 * time.Second) // let php-fpm settle: ondemand workers, counters
	if code, body := get(t, plain, base+"/rss.php", "", "", nil); code == 200 {
		t.Logf("php-fpm at idle (one worker serving this request): %s", strings.TrimSpace(body))
	}
	startedAt := func() string {
		code, body := get(t, plain, base+"/status?format=json", "", "", nil)
		var st struct {
			StartedAt string `json:"started_at"`
			PHPFPM    []struct {
				Pool        string `json:"pool"`
				MaxChildren int    `json:"max_children"`
			} `json:"phpfpm"`
		}
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st.PHPFPM) != 1 || st.PHPFPM[0].Pool != "arka" {
			t.Fatalf("status: %d %v %.400s", code, err, body)
		}
		t.Logf("status: php-fpm pool %q, pm.max_children %d", st.PHPFPM[0].Pool, st.PHPFPM[0].MaxChildren)
		return st.StartedAt
	}
	before := startedAt()

	// Reboot through gokrazy's API; the database must survive on /perm.
	pwb, _ := os.ReadFile(sum.PasswordFile)
	if code, body := post(t, fmt.Sprintf("http://127.0.0.1:%d/reboot", v.Ports[8080]), strings.TrimSpace(string(pwb))); code != 200 {
		t.Fatalf("POST /reboot: %d %s", code, body)
	}
	rebooted := time.Now()
	deadline := time.Now().Add(bootTimeout)
	for {
		resp, err := plain.Get(base + "/status?format=json")
		if err == nil {
			var st struct {
				StartedAt string `json:"started_at"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if resp.StatusCode == 200 && st.StartedAt != "" && st.StartedAt != before {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Arka did not come back within %s of the reboot", bootTimeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("reboot to Arka answering again: %s", time.Since(rebooted).Round(100*time.Millisecond))
	waitHTTP(t, v, base+"/")
	code, body = get(t, plain, base+"/?note=after-reboot", "", "", nil)
	if code != 200 || !strings.Contains(body, "notes: before-reboot,after-reboot\n") {
		t.Errorf("after the reboot: %d %q, want both notes from the database on /perm", code, body)
	}
	if !regexp.MustCompile(`arka-init: perm: /dev/vda4 ext4 rw`).MatchString(v.SerialTail(1 << 20)) {
		t.Errorf("/perm was not mounted read-write")
	}
}

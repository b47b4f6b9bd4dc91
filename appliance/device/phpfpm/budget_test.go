package phpfpm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/config"
)

// The php-fpm pool Arka generates for each fixture board is the one the
// README's budget table shows (pm.max_children, pm, opcache), and the
// generated php-fpm.conf and php.ini say so.
func TestPoolSizesMatchREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		f := strings.Split(line, "|")
		if len(f) > 18 {
			rows[strings.TrimSpace(f[1])] = f
		}
	}
	fixtures, _ := filepath.Glob(filepath.Join("..", "..", "..", "board", "testdata", "*"))
	n := 0
	for _, dir := range fixtures {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		name := filepath.Base(dir)
		row, ok := rows[name]
		if !ok {
			t.Errorf("fixture %s has no row in the README's budget table", name)
			continue
		}
		n++
		b, err := board.Detect(dir)
		if err != nil {
			t.Fatal(err)
		}
		bud := board.ComputeBudget(b, board.Overrides{})
		c, err := FromSettings(&config.PHP{FPMPath: "/usr/sbin/php-fpm8.2"}, bud, "/perm/arka/state")
		if err != nil {
			t.Fatal(err)
		}
		c.defaults()
		c.RunDir = "/run/x"
		// pm.max_children, pm and opcache are the table's last three
		// columns (the row ends with "|": its last field is empty).
		k := len(row) - 4
		want := []string{strings.TrimSpace(row[k]), strings.TrimSpace(row[k+1]), strings.TrimSpace(row[k+2])}
		got := []string{fmt.Sprint(c.MaxChildren), string(c.PM), fmt.Sprintf("%d MiB", c.OpcacheMiB)}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: php-fpm pool %v, README says %v", name, got, want)
		}
		conf, ini := c.FPMConf(), c.PHPIni()
		if !strings.Contains(conf, fmt.Sprintf("\npm = %s\npm.max_children = %d\n", c.PM, c.MaxChildren)) ||
			!strings.Contains(ini, fmt.Sprintf("\nopcache.memory_consumption = %d\n", c.OpcacheMiB)) {
			t.Errorf("%s: generated files do not carry the budget:\n%s\n%s", name, conf, ini)
		}
		// A script stuck in sleep() or a network wait is not stopped by
		// max_execution_time (CPU time on Linux): the pool needs a wall clock.
		if !strings.Contains(conf, "\nrequest_terminate_timeout = 300s\n") {
			t.Errorf("%s: no default request_terminate_timeout in\n%s", name, conf)
		}
		t.Logf("%-20s pm.max_children %3d  pm %-8s  opcache %3d MiB  memory_limit %s", name, c.MaxChildren, c.PM, c.OpcacheMiB, mib(c.MemoryLimit))
	}
	if n < 10 {
		t.Errorf("only %d fixture boards checked", n)
	}
}

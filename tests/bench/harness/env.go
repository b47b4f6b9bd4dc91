package harness

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Env describes the machine and the programs of a run.
type Env struct {
	Date      time.Time
	CPUModel  string
	Cores     int
	MemoryMB  int64
	Kernel    string
	GoVersion string
	Commit    string            // git describe of the repository, if any
	Versions  map[string]string // program -> version line
	LoadStart string            // /proc/loadavg at the start
	LoadEnd   string            // and at the end
}

func collectEnv(ctx context.Context, r *Run) *Env {
	e := &Env{Date: time.Now().UTC(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Versions: map[string]string{}, LoadStart: LoadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); m != nil {
			e.CPUModel = strings.TrimSpace(string(m[1]))
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		e.MemoryMB = statusKB(b, "MemTotal:") / 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
	}
	v := func(name string, args ...string) {
		t := r.tools[name]
		if t == nil || t.Path == "" {
			return
		}
		e.Versions[name] = Version(ctx, t.Path, args...)
	}
	v("nginx", "-v")
	v("apache", "-v")
	v("caddy", "version")
	v("lighttpd", "-v")
	v("php-fpm", "-v")
	v("h2load", "--version")
	v("wrk", "-v")
	return e
}

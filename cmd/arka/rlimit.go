package main

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// wantNoFile is the open-file limit Arka asks for: room for the
// connection limit of a few listen addresses (up to 65536 each, see
// maxConns), the spool budget's files and the open-file cache. nginx
// deployments commonly set worker_rlimit_nofile to the same.
const wantNoFile = 65536

// raiseNoFile raises RLIMIT_NOFILE to wantNoFile where it is lower. Go
// (since 1.19) already raises the soft limit to the hard one at start,
// but the hard limit is often low: 4096 on gokrazy, the kernel's default
// for init, which every process there inherits. Running as root (or with
// CAP_SYS_RESOURCE), Arka raises the hard limit too, up to the kernel's
// fs.nr_open; otherwise the limit stays what Go made it. It returns the
// soft limit in force.
func raiseNoFile(log *slog.Logger) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	want := uint64(wantNoFile)
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			want = min(want, n)
		}
	}
	if lim.Cur >= want {
		return lim.Cur
	}
	next := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		// Not allowed to raise the hard limit: the soft one up to it.
		next = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next) != nil {
			return lim.Cur
		}
		if lim.Max < want {
			log.Info("open-file limit below what Arka asks for: the system refused to raise its hard limit (that takes root or CAP_SYS_RESOURCE, and a container may forbid it)", "limit", lim.Max, "want", want)
		}
	}
	return next.Cur
}

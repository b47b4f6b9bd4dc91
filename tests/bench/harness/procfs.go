package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What is measured from /proc (Linux, proc(5)):
//
//   - CPU of a process tree: utime+stime+cutime+cstime of the root and
//     every live descendant, from /proc/PID/stat, in clock ticks. A
//     process that exits during a run moves its time into its parent's
//     cutime/cstime when reaped, so the sum over the tree before and after
//     a run counts it once.
//   - Peak memory of a process tree: the sum of VmHWM (peak resident set
//     size) over the tree's processes, each process's peak having been
//     reset at the start of the run by writing 5 to /proc/PID/clear_refs.
//     It is a sum of per-process peaks (an upper bound of the tree's peak),
//     and pages shared between processes (nginx and Apache workers,
//     php-fpm workers) are counted once per process, as RSS does.
//   - Machine CPU: the "cpu" line of /proc/stat, busy = all but idle and
//     iowait.

// clockTicks is USER_HZ, the unit of /proc/PID/stat times; 100 on every
// Linux architecture Arka runs on.
const clockTicks = 100

// procStat is the part of /proc/PID/stat the harness uses.
type procStat struct {
	pid, ppid int
	ticks     int64 // utime+stime+cutime+cstime
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses /proc/PID/stat: "pid (comm) state ppid ... utime
// stime cutime cstime ..." where comm may contain spaces and parentheses.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat: no command name in %q", b)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:bytes.IndexByte(b, '(')])))
	if err != nil {
		return procStat{}, fmt.Errorf("stat: pid: %v", err)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is state (field 3); utime is field 14, so f[11].
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	var v [5]int64
	for k, idx := range []int{1, 11, 12, 13, 14} {
		v[k], err = strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat: field %d: %v", idx+3, err)
		}
	}
	return procStat{pid: pid, ppid: int(v[0]), ticks: v[1] + v[2] + v[3] + v[4]}, nil
}

// allStats reads /proc/PID/stat of every process.
func allStats() map[int]procStat {
	ents, _ := os.ReadDir("/proc")
	m := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(pid); err == nil {
			m[pid] = st
		}
	}
	return m
}

// Tree returns root and its live descendants (sorted), and their summed CPU
// ticks. Roots that are gone contribute nothing.
func Tree(roots ...int) (pids []int, ticks int64) {
	all := allStats()
	children := map[int][]int{}
	for _, st := range all {
		children[st.ppid] = append(children[st.ppid], st.pid)
	}
	seen := map[int]bool{}
	var walk func(int)
	walk = func(p int) {
		st, ok := all[p]
		if !ok || seen[p] {
			return
		}
		seen[p] = true
		pids = append(pids, p)
		ticks += st.ticks
		for _, c := range children[p] {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	slices.Sort(pids)
	return pids, ticks
}

// ResetPeakRSS resets VmHWM of each process to its current RSS (Linux 4.0+,
// proc(5) clear_refs). Processes that are gone are ignored.
func ResetPeakRSS(pids []int) {
	for _, p := range pids {
		_ = os.WriteFile(filepath.Join("/proc", strconv.Itoa(p), "clear_refs"), []byte("5"), 0)
	}
}

// PeakRSS sums VmHWM over pids, in bytes.
func PeakRSS(pids []int) int64 {
	var sum int64
	for _, p := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "status"))
		if err != nil {
			continue
		}
		sum += statusKB(b, "VmHWM:") * 1024
	}
	return sum
}

// statusKB reads a "Key:   123 kB" line of /proc/PID/status.
func statusKB(b []byte, key string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// MachineCPU is the machine's CPU time from /proc/stat, in clock ticks.
type MachineCPU struct{ Busy, Total int64 }

// ReadMachineCPU reads the aggregate "cpu" line of /proc/stat.
func ReadMachineCPU() MachineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}
	}
	return parseMachineCPU(b)
}

func parseMachineCPU(b []byte) MachineCPU {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return MachineCPU{}
	}
	var m MachineCPU
	for i, s := range f[1:] {
		n, _ := strconv.ParseInt(s, 10, 64)
		if i >= 8 { // guest and guest_nice are already in user and nice; steal counts as busy (another VM had the core)
			break
		}
		m.Total += n
		if i != 3 && i != 4 { // idle, iowait
			m.Busy += n
		}
	}
	return m
}

// LoadAvg returns /proc/loadavg's first three fields.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

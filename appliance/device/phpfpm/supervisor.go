package phpfpm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/internal/atomicfile"
)

// Back-off between restarts of a php-fpm that died: it doubles from
// minBackoff up to maxBackoff, and starts over once php-fpm has run for
// healthyAfter.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 30 * time.Second
	healthyAfter = 30 * time.Second
	readyTimeout = 60 * time.Second // php-fpm up to its socket answering (slow under emulation)
	stopGrace    = 5 * time.Second  // SIGQUIT (finish requests) before SIGTERM
)

// Supervisor runs one php-fpm. Create it with New, then Start; Stop ends
// it. Its methods are safe for concurrent use.
type Supervisor struct {
	c   Config
	log *slog.Logger
	ini string // php.ini contents, for Changed
	fpm string // php-fpm.conf contents

	mu       sync.Mutex
	cmd      *exec.Cmd // the running master, or nil
	pgid     int
	started  time.Time
	restarts int
	stopping bool
	stopped  chan struct{} // closed when the supervision loop has ended
	wake     chan struct{} // interrupts a back-off sleep on Stop
	tail     ring          // php-fpm's last output lines
	ownRun   bool          // RunDir was made here under /tmp and is removed on Stop

	status statusCache
}

// New prepares php-fpm's directories and files (it starts nothing).
// Errors name the path or setting at fault.
func New(c Config, log *slog.Logger) (*Supervisor, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{c: c, log: log.With("component", "php-fpm"), wake: make(chan struct{}, 1)}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	return s, nil
}

// Config returns the configuration in force (paths filled in).
func (s *Supervisor) Config() Config { return s.c }

// Address is the pool's FastCGI address for Arka's routes:
// "unix:/…/php-fpm.sock".
func (s *Supervisor) Address() string { return "unix:" + s.c.socket() }

// MaxChildren is pm.max_children: the default max_conns of routes to this
// pool, so that requests beyond it wait in Arka's FIFO queue rather than
// in php-fpm's listen backlog.
func (s *Supervisor) MaxChildren() int { return s.c.MaxChildren }

// Restarts counts how often php-fpm was started again after dying.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Pid returns the pid of the running php-fpm master, or 0.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Same reports whether c would generate exactly the running configuration,
// so a reload can keep php-fpm running.
func (s *Supervisor) Same(c Config) bool {
	if c.defaults() != nil {
		return false
	}
	if c.RunDir == "" {
		c.RunDir = s.c.RunDir
	}
	return c.FPM == s.c.FPM && c.FPMConf() == s.fpm && c.PHPIni() == s.ini
}

// prepare makes the directories (data owned by the workers' user) and
// writes the configuration files.
func (s *Supervisor) prepare() error {
	c := &s.c
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("phpfpm: %v", err)
	}
	if c.RunDir == "" {
		d, err := os.MkdirTemp("", "arka-php-")
		if err != nil {
			return fmt.Errorf("phpfpm: run directory: %v", err)
		}
		c.RunDir, s.ownRun = d, true
	}
	if err := os.MkdirAll(c.RunDir, 0o700); err != nil {
		return fmt.Errorf("phpfpm: %v", err)
	}
	for _, d := range []string{"", "sessions", "uploads", "tmp"} {
		p := filepath.Join(c.DataDir, d)
		if err := os.MkdirAll(p, 0o750); err != nil {
			return fmt.Errorf("phpfpm: data directory: %v", err)
		}
		if asRoot() {
			if err := os.Chown(p, c.UID, c.GID); err != nil {
				return fmt.Errorf("phpfpm: data directory: %v", err)
			}
		}
		if d == "sessions" {
			os.Chmod(p, 0o730) // workers may not list others' sessions
		}
	}
	if asRoot() && c.UID != 0 {
		if err := traversable(c.DataDir, c.owned(), c.UID, c.GID, s.log); err != nil {
			return fmt.Errorf("phpfpm: data directory: %v", err)
		}
	}
	s.fpm, s.ini = c.FPMConf(), c.PHPIni()
	if err := writeIfChanged(c.confFile(), s.fpm); err != nil {
		return err
	}
	return writeIfChanged(c.iniFile(), s.ini)
}

// traversable lets the workers' user (uid, gid) reach the data directory
// dir. Directories of Arka's own (owned and below: Arka's state directory
// is 0700, it holds TLS keys) get search permission for others (o+x,
// never read: 0701 still lets nobody list or read them), each change
// logged. Directories above owned are not Arka's (with the default state
// directory of root, /root is one): their permissions are never changed;
// one that the workers cannot search is an error naming it and what to do
// (QA A14).
func traversable(dir, owned string, uid, gid int, log *slog.Logger) error {
	owned = filepath.Clean(owned)
	var open []string // Arka's directories lacking o+x, changed once all above are known to be searchable
	for d := filepath.Dir(filepath.Clean(dir)); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		if d == owned || strings.HasPrefix(d, owned+string(filepath.Separator)) {
			if perm&0o001 == 0 {
				open = append(open, d)
			}
		} else if !searchable(fi, uid, gid) {
			return fmt.Errorf("the workers' user (uid %d) cannot reach %s: %s is %04o, and Arka changes no permissions outside its state directory %s. "+
				"Set php's data_dir to a directory it can reach (php = { data_dir = \"/var/lib/arka/php-data\", ... }), run Arka with a state directory outside %s (-state /var/lib/arka), "+
				"or allow the search yourself (chmod o+x %s)", uid, dir, d, perm, owned, d, d)
		}
		if d == "/" || d == "." {
			break
		}
	}
	for _, d := range open {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		if err := os.Chmod(d, perm|0o001); err != nil {
			return err
		}
		log.Info("php: search permission for others added (o+x) so the workers reach their data directory", "dir", d, "was", fmt.Sprintf("%04o", perm), "now", fmt.Sprintf("%04o", perm|0o001))
	}
	return nil
}

// searchable reports whether uid, gid (no supplementary groups) may
// search the directory fi by its mode bits.
func searchable(fi os.FileInfo, uid, gid int) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return perm&0o001 != 0
	case int(st.Uid) == uid:
		return perm&0o100 != 0
	case int(st.Gid) == gid:
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

// writeIfChanged writes data to path unless it already holds it (no
// needless writes to an SD card).
func writeIfChanged(path, data string) error {
	if b, err := os.ReadFile(path); err == nil && string(b) == data {
		return nil
	}
	if err := atomicfile.Write(path, []byte(data), 0o644); err != nil {
		return fmt.Errorf("phpfpm: %v", err)
	}
	return nil
}

// Start starts php-fpm and waits until its socket accepts connections. If
// php-fpm exits before that (a bad setting, a missing library), Start
// returns an error with php-fpm's last output. After a successful Start,
// php-fpm is restarted whenever it dies, until Stop.
func (s *Supervisor) Start() error {
	s.mu.Lock()
	if s.stopped != nil {
		s.mu.Unlock()
		return errors.New("phpfpm: already started")
	}
	s.stopped = make(chan struct{})
	s.mu.Unlock()
	s.killLeftover()
	first := make(chan error, 1)
	go s.loop(first)
	return <-first
}

// loop runs php-fpm until Stop, restarting it with back-off. The first
// start's result goes to first. It keeps its OS thread locked while a
// php-fpm runs, because Pdeathsig (php-fpm ends if Arka dies) is tied to
// the thread that started the child.
func (s *Supervisor) loop(first chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(s.stopped)
	backoff := minBackoff
	for n := 0; ; n++ {
		began := time.Now()
		cmd, exited, err := s.spawn()
		if err == nil {
			err = s.waitReady(exited)
		}
		if n == 0 {
			first <- err
			if err != nil {
				s.reap(cmd, exited)
				return
			}
		}
		if err == nil {
			if n > 0 {
				s.log.Info("php-fpm is serving again", "pid", cmd.Process.Pid, "restarts", s.Restarts())
			}
			<-exited
			err = cmd.Wait()
		}
		s.reap(cmd, exited)
		if s.isStopping() {
			return
		}
		if time.Since(began) > healthyAfter {
			backoff = minBackoff
		}
		s.log.Error("php-fpm exited; restarting", "err", exitText(err), "after", backoff, "output", s.tail.String())
		select {
		case <-time.After(backoff):
		case <-s.wake:
		}
		if s.isStopping() {
			return
		}
		backoff = min(2*backoff, maxBackoff)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

func exitText(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	return err.Error()
}

func (s *Supervisor) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// spawn starts the php-fpm master in a process group of its own (so that a
// signal to the group reaches its workers too) with its output piped into
// the error log. exited is closed when the process has exited (it is not
// yet reaped: cmd.Wait does that).
func (s *Supervisor) spawn() (*exec.Cmd, chan struct{}, error) {
	c := &s.c
	os.Remove(c.socket()) // left by a php-fpm that was killed
	os.Remove(c.statusSock())
	args := []string{"--nodaemonize", "--fpm-config", c.confFile(), "--php-ini", c.iniFile(), "--prefix", c.Dir}
	if asRoot() && c.AllowRoot {
		args = append(args, "--allow-to-run-as-root")
	}
	cmd := exec.Command(c.FPM, args...)
	cmd.Dir = c.Dir
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR=" + filepath.Join(c.DataDir, "tmp")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("phpfpm: start %s: %v", c.FPM, err)
	}
	pw.Close()
	exited := make(chan struct{})
	go func() {
		s.copyLog(pr)
		pr.Close()
	}()
	go func() {
		// Waitid with WNOWAIT: learn of the exit without reaping, so the
		// pid (and process group id) cannot be reused before reap's kill.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.pgid, s.started = cmd, cmd.Process.Pid, time.Now()
	s.mu.Unlock()
	s.log.Info("php-fpm started", "pid", cmd.Process.Pid, "binary", c.FPM, "pm", c.PM, "max_children", c.MaxChildren,
		"socket", c.socket())
	return cmd, exited, nil
}

// waitReady waits until the pool's socket accepts a connection.
func (s *Supervisor) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		c, err := net.DialTimeout("unix", s.c.socket(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			time.Sleep(50 * time.Millisecond) // let the last output arrive
			return fmt.Errorf("phpfpm: %s exited at start:\n%s", s.c.FPM, s.tail.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("phpfpm: %s did not listen on %s within %v:\n%s", s.c.FPM, s.c.socket(), readyTimeout, s.tail.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reap ends whatever is left of a php-fpm: the master (if it still runs)
// and every worker in its process group, then removes its sockets.
func (s *Supervisor) reap(cmd *exec.Cmd, exited chan struct{}) {
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	select {
	case <-exited:
	default:
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	// The master has exited but is not reaped yet, so the group id is
	// still ours: workers that outlived their master die with it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
	os.Remove(s.c.socket())
	os.Remove(s.c.statusSock())
	os.Remove(s.c.pidFile())
}

// killLeftover ends a php-fpm left running by an Arka that was killed
// before it could stop it (its pid file names it, and its command line
// names our configuration).
func (s *Supervisor) killLeftover() {
	b, err := os.ReadFile(s.c.pidFile())
	if err != nil {
		return
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), s.c.confFile()) {
		// php-fpm's master renames itself "php-fpm: master process
		// (/path/php-fpm.conf)": the path is still there.
		if err != nil || !strings.Contains(string(cmdline), "php-fpm") {
			return
		}
	}
	s.log.Warn("stopping a php-fpm left over from an earlier run", "pid", pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	os.Remove(s.c.pidFile())
}

// Stop ends php-fpm: SIGQUIT lets workers finish their requests for up to
// 5 seconds (or until ctx ends), then SIGTERM and SIGKILL end the whole
// process group. The sockets are removed. Stop waits for all of it and is
// idempotent.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	cmd, stopped := s.cmd, s.stopped
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if stopped == nil {
		s.cleanupRun()
		return nil
	}
	if cmd != nil {
		pgid := cmd.Process.Pid
		syscall.Kill(pgid, syscall.SIGQUIT) // graceful: finish running requests
		grace := time.NewTimer(stopGrace)
		select {
		case <-stopped:
		case <-grace.C:
		case <-ctx.Done():
		}
		grace.Stop()
		syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-stopped:
		case <-time.After(time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	<-stopped
	s.cleanupRun()
	s.log.Info("php-fpm stopped")
	return nil
}

func (s *Supervisor) cleanupRun() {
	os.Remove(s.c.socket())
	os.Remove(s.c.statusSock())
	if s.ownRun {
		os.RemoveAll(s.c.RunDir)
	}
}

// copyLog sends php-fpm's output (its own log and, with
// catch_workers_output, the workers' stderr) to the error log, one record
// per line. Lines are cut at maxLine bytes and at most burst lines per
// second are logged; the rest are counted and reported.
func (s *Supervisor) copyLog(r io.Reader) {
	const (
		maxLine = 1024
		burst   = 50
	)
	br := bufio.NewReaderSize(r, 4096)
	var (
		window  time.Time
		n       int
		dropped int
	)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			full := err == bufio.ErrBufferFull
			text := strings.TrimRight(string(line[:min(len(line), maxLine)]), "\r\n")
			if full { // skip the rest of an overlong line
				for err == bufio.ErrBufferFull {
					_, err = br.ReadSlice('\n')
				}
				text += " …"
			}
			s.tail.add(text)
			now := time.Now()
			if now.Sub(window) >= time.Second {
				if dropped > 0 {
					s.log.Warn("php-fpm output lines not logged (more than 50 a second)", "dropped", dropped)
				}
				window, n, dropped = now, 0, 0
			}
			if n < burst {
				n++
				level, msg := classify(text)
				s.log.Log(context.Background(), level, msg)
			} else {
				dropped++
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			if dropped > 0 {
				s.log.Warn("php-fpm output lines not logged (more than 50 a second)", "dropped", dropped)
			}
			return
		}
	}
}

// classify maps php-fpm's "[date] LEVEL: message" lines to a log level
// and strips the date (the error log has its own).
func classify(line string) (slog.Level, string) {
	msg := line
	if strings.HasPrefix(msg, "[") {
		if i := strings.Index(msg, "] "); i > 0 {
			msg = msg[i+2:]
		}
	}
	for _, l := range []struct {
		p     string
		level slog.Level
	}{{"NOTICE: ", slog.LevelInfo}, {"DEBUG: ", slog.LevelDebug}, {"WARNING: ", slog.LevelWarn},
		{"ERROR: ", slog.LevelError}, {"ALERT: ", slog.LevelError}} {
		if rest, ok := strings.CutPrefix(msg, l.p); ok {
			return l.level, "php-fpm: " + rest
		}
	}
	// A worker's own output (PHP warnings, error_log()).
	return slog.LevelWarn, "php: " + msg
}

// ring keeps the last lines of php-fpm's output for error messages.
type ring struct {
	mu    sync.Mutex
	lines [20]string
	n     int
}

func (r *ring) add(s string) {
	r.mu.Lock()
	r.lines[r.n%len(r.lines)] = s
	r.n++
	r.mu.Unlock()
}

// String returns the kept lines, oldest first.
func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i := max(0, r.n-len(r.lines)); i < r.n; i++ {
		b.WriteString(r.lines[i%len(r.lines)])
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

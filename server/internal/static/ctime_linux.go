package static

import "syscall"

// ctimeOf returns a file's change time (the inode's last change, which a
// rewrite in place makes even when it restores size and mtime) in Unix
// nanoseconds.
func ctimeOf(st *syscall.Stat_t) int64 {
	s, ns := st.Ctim.Unix()
	return s*1e9 + ns
}

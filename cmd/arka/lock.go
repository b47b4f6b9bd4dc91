package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockState takes an exclusive lock (flock(2)) on dir/arka.lock for the
// life of the process, so that two servers cannot share one state
// directory: they would stop each other's php-fpm and remove each other's
// sockets. The file holds the owner's pid for the message a second server
// prints. The lock goes with the process, however it ends. An error of
// type *busyError means another server holds the lock; any other (a
// read-only directory) is only worth a warning.
func lockState(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "arka.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := "another arka"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				owner = fmt.Sprintf("another arka (pid %d)", pid)
			}
			return nil, &busyError{fmt.Sprintf("state directory %s is in use by %s; give this one its own with -state DIR", dir, owner)}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg }

package static

import "syscall"

// lowerPriority gives the calling thread a low CPU priority (nice
// 10, not 19: requests still go first, but a busy board still gets its
// pages compressed): on Linux setpriority with a thread id applies to that
// thread only.
func lowerPriority() {
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 10)
}

// Command crashafter stands in for Arka in a test image whose Arka works
// and then crashes: it starts a watcher (itself again), then replaces
// itself with the real Arka (its own path + ".real", same process ID,
// arguments and environment). The watcher kills that process with SIGKILL
// the given time after it started, unless it has ended by then. So Arka
// passes an update's trial and then crash-loops, as a build with a bug that
// strikes after a while would.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// after is when the real Arka is killed (-ldflags "-X main.after=25s").
var after = "25s"

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-crashafter-watch" {
		d, _ := time.ParseDuration(os.Args[2])
		parent := os.Getppid()
		time.Sleep(d)
		if os.Getppid() == parent { // still the process it was started by
			syscall.Kill(parent, syscall.SIGKILL)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashafter:", err)
		os.Exit(1)
	}
	watch := exec.Command(self, "-crashafter-watch", after)
	if err := watch.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "crashafter:", err)
		os.Exit(1)
	}
	err = syscall.Exec(self+".real", os.Args, os.Environ())
	fmt.Fprintln(os.Stderr, "crashafter:", err)
	os.Exit(1)
}

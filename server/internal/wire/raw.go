package wire

// Raw system calls for socket reads and writes (raw_linux.go).
//
// # Where the time goes
//
// Every read and write of a net.Conn is a system call made through
// syscall.Syscall, which tells the Go runtime that the goroutine may block
// (entersyscall, exitsyscall). If the call lasts longer than sysmon's
// polling interval (20 µs, and a loopback write that delivers to the
// receiver often does), sysmon retakes the P and hands it to another
// thread (handoffp, startm), and the returning call takes the slow path
// (exitsyscall0). A busy server keeps sysmon finding such calls, so it
// never backs off to its 10 ms interval. Reads and writes of a
// non-blocking socket never block: Raw makes them with syscall.RawSyscall
// inside syscall.RawConn's Read and Write, which keep the netpoller's
// wait on EAGAIN, deadlines and Close as net.Conn has them.
//
// Anything that can block on a disk (sendfile from a file) keeps the
// runtime's bookkeeping: ReadFrom goes to the *net.TCPConn.

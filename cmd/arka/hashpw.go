package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"
)

// hashPassword implements `arka hash-password`: it reads a password from
// the terminal (twice, without echo) or, when standard input is not a
// terminal, its first line, and prints its bcrypt hash for basic_auth.
func hashPassword(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: arka hash-password   (reads the password from the terminal, or one line from standard input)")
		return 2
	}
	var pw []byte
	if term.IsTerminal(int(stdin.Fd())) {
		fmt.Fprint(stderr, "Password: ")
		a, err := term.ReadPassword(int(stdin.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			fmt.Fprintln(stderr, "arka: reading the password:", err)
			return 1
		}
		fmt.Fprint(stderr, "Again: ")
		b, err := term.ReadPassword(int(stdin.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			fmt.Fprintln(stderr, "arka: reading the password:", err)
			return 1
		}
		if string(a) != string(b) {
			fmt.Fprintln(stderr, "arka: the passwords differ")
			return 1
		}
		pw = a
	} else {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, "arka: reading the password:", err)
			return 1
		}
		pw = []byte(strings.TrimRight(line, "\r\n"))
	}
	if len(pw) == 0 {
		fmt.Fprintln(stderr, "arka: empty password")
		return 1
	}
	h, err := bcrypt.GenerateFromPassword(pw, bcrypt.DefaultCost)
	if err != nil {
		// bcrypt takes at most 72 bytes.
		fmt.Fprintln(stderr, "arka:", err)
		return 1
	}
	fmt.Fprintln(stdout, string(h))
	return 0
}

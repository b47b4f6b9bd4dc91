package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Error is one configuration mistake, located in its file.
//
// Its text is "file:line:col: message" (line and column start at 1; either
// is omitted when unknown), the form editors and compilers use, so that a
// person can jump straight to the mistake.
type Error struct {
	File string // path of the site file as given to Load
	Line int    // 1-based; 0 when the mistake is not tied to a line
	Col  int    // 1-based; 0 when unknown
	Msg  string // what is wrong, and where possible what would be right
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every mistake found in one load, in file and line order. Load
// reports all of them at once rather than stopping at the first, so one run
// of `arka -t` shows everything to fix.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// errText shortens an *os.PathError to its cause, since messages already
// name the path.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// quotedRE matches a string quoted as %q writes it.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// shortenQuoted shortens each quoted value in a message that is longer
// than a line to its start and end: a message echoes what was written,
// and a 200,000-byte server name is not worth printing whole.
func shortenQuoted(msg string) string {
	const keep, head, tail = 120, 60, 20 // runes
	if len(msg) < keep {
		return msg
	}
	return quotedRE.ReplaceAllStringFunc(msg, func(q string) string {
		s, err := strconv.Unquote(q)
		if err != nil {
			return q
		}
		r := []rune(s)
		if len(r) <= keep {
			return q
		}
		return fmt.Sprintf("%q", string(r[:head])+"…"+string(r[len(r)-tail:])) + fmt.Sprintf(" (%d bytes)", len(s))
	})
}

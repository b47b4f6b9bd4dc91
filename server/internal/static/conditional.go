package static

import (
	"net/http"
	"time"
)

// Outcome of evaluating the preconditions of a request.
type precondition uint8

const (
	proceed       precondition = iota // send the selected representation
	notModified                       // 304
	failedPrecond                     // 412
)

// evalPreconditions applies RFC 9110 section 13.2.2 to a representation with
// a strong entity tag etag (quoted, as sent in ETag) and last modification
// modTime:
//
//  1. If-Match: false -> 412 (strong comparison, section 13.1.1);
//  2. else If-Unmodified-Since: modified after the date -> 412;
//  3. If-None-Match: true -> 304 for GET/HEAD, else 412 (weak comparison);
//  4. else If-Modified-Since (GET/HEAD only): not modified since -> 304.
//
// Dates that do not parse are ignored, as the RFC requires.
func evalPreconditions(r *http.Request, etag string, modTime time.Time) precondition {
	h := r.Header
	if im := h["If-Match"]; len(im) > 0 {
		if !etagListMatch(im, etag, true) {
			return failedPrecond
		}
	} else if ius := h["If-Unmodified-Since"]; len(ius) == 1 {
		// More than one member: ignored (RFC 9110 section 13.1.4).
		if t, err := http.ParseTime(ius[0]); err == nil && modTime.Truncate(time.Second).After(t) {
			return failedPrecond
		}
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if inm := h["If-None-Match"]; len(inm) > 0 {
		if etagListMatch(inm, etag, false) {
			if get {
				return notModified
			}
			return failedPrecond
		}
	} else if ims := h["If-Modified-Since"]; len(ims) == 1 && get {
		// More than one member: ignored (RFC 9110 section 13.1.3).
		if t, err := http.ParseTime(ims[0]); err == nil && !modTime.Truncate(time.Second).After(t) {
			return notModified
		}
	}
	return proceed
}

// etagListMatch reports whether a list of entity tags (If-Match or
// If-None-Match field lines) matches etag. "*" matches any current
// representation. With strong comparison a weak tag never matches; with weak
// comparison the W/ prefixes are ignored (RFC 9110 section 8.8.3.2).
func etagListMatch(lines []string, etag string, strong bool) bool {
	for _, line := range lines {
		s := line
		for s != "" {
			s = trimOWS(s)
			if s == "" {
				break
			}
			if s[0] == ',' {
				s = s[1:]
				continue
			}
			if s[0] == '*' {
				return true
			}
			weak := false
			if len(s) >= 2 && s[0] == 'W' && s[1] == '/' {
				weak = true
				s = s[2:]
			}
			if s == "" || s[0] != '"' {
				// Malformed: skip to the next element.
				for s != "" && s[0] != ',' {
					s = s[1:]
				}
				continue
			}
			end := 1
			for end < len(s) && s[end] != '"' {
				end++
			}
			if end >= len(s) {
				break
			}
			tag := s[:end+1]
			s = s[end+1:]
			if tag == etag && !(strong && weak) {
				return true
			}
		}
	}
	return false
}

// ifRangeAllows reports whether a Range may be honoured given If-Range
// (RFC 9110 section 13.1.5): the validator must match the representation
// strongly; a weak tag never matches; a date matches only the exact
// Last-Modified second.
func ifRangeAllows(r *http.Request, etag string, modTime time.Time) bool {
	v := r.Header["If-Range"]
	if len(v) == 0 {
		return true
	}
	if len(v) > 1 {
		return false // one validator only: several lines match nothing
	}
	s := trimOWS(v[0])
	if s == "" {
		return false
	}
	if s[0] == '"' {
		return s == etag
	}
	if len(s) > 1 && s[0] == 'W' && s[1] == '/' {
		return false
	}
	t, err := http.ParseTime(s)
	return err == nil && modTime.Truncate(time.Second).Equal(t)
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

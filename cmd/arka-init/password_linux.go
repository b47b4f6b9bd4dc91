package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"strings"
)

// permPassword overrides the image's /etc/gokr-pw.txt (gokrazy reads
// /perm first); gokrazy reads it at boot, so a new password takes effect
// at the next boot.
const permPassword = "/perm/gokr-pw.txt"

// servePassword serves POST /arka/password ({"password": "…"}, behind the
// current password): the device password rotation of `arka-appliance
// password`.
func servePassword(mux *http.ServeMux) {
	mux.HandleFunc("POST /arka/password", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Password string `json:"password"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
			http.Error(w, "password request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if msg := checkPassword(req.Password); msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		if err := writeAtomic(permPassword, []byte(req.Password+"\n"), 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Printf("password: a new device password is in %s; it takes effect at the next boot", permPassword)
		w.Write([]byte("the new password takes effect at the next boot\n"))
	})
}

// checkPassword returns what is wrong with a new password, or "".
func checkPassword(pw string) string {
	if len(pw) < 16 || len(pw) > 128 {
		return "a device password has 16 to 128 characters"
	}
	if strings.ContainsFunc(pw, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "a device password has printable ASCII characters only, no spaces"
	}
	return ""
}

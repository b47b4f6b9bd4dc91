package status

import "time"

// Certificate is one certificate Arka obtains and renews by itself (ACME),
// for the status page.
type Certificate struct {
	Name  string `json:"name"`
	State string `json:"state"` // "waiting for clock", "obtaining", "valid", "renewing", "error"
	CA    string `json:"ca"`    // ACME directory URL
	// Issuer is the issuing CA's name; NotBefore and NotAfter the
	// certificate's validity (zero while there is none).
	Issuer    string    `json:"issuer,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
	NotAfter  time.Time `json:"not_after,omitzero"`
	// NextAttempt is when renewal is due, or when a failed attempt is
	// tried again.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// LastError is the last failure (with the CA's problem detail), empty
	// after a success.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// Valid reports whether the certificate is within its validity at t.
func (c Certificate) Valid(t time.Time) bool {
	return !c.NotAfter.IsZero() && t.Before(c.NotAfter) && !t.Before(c.NotBefore)
}

package wire

// DefaultMaxHeaderBytes bounds a request's header section (request line or
// pseudo-header fields and all field lines) when the server sets no limit:
// 32 KiB, as the README says. Larger gets 431 (RFC 6585 section 5). Both
// engines and the server's options default to this one number.
const DefaultMaxHeaderBytes = 32 << 10

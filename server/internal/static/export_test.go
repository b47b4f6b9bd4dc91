package static

// SetMaxListingRead lowers the bound on the names read for a listing, for
// a test; it returns the old value.
func SetMaxListingRead(n int) int {
	old := maxListingRead
	maxListingRead = n
	return old
}

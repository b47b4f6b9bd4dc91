package ota

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ReadStatusFile reads the last update attempt from a status file written by
// the Agent (StatusFile on the device). It returns nil and no error when the
// file does not exist (no update was ever attempted). Arka itself reads it to
// show the update state on the activity LED and the status page.
func ReadStatusFile(path string) (*Attempt, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var at Attempt
	if err := json.Unmarshal(b, &at); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &at, nil
}

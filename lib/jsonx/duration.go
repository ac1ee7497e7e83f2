package jsonx

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "1m30s"), the form README.md, "Conventions every tool shares" fixes for every document.
type Duration time.Duration

// D is the time.Duration value.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string; zero is "0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts only a duration string and refuses negative values.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a duration string such as \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (use Go syntax such as \"30s\" or \"1m30s\")", s)
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", s)
	}
	*d = Duration(v)
	return nil
}

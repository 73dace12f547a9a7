package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandem-dev/tandem/internal/base/errs"
)

// decodeInput parses a call's input into v. Models sometimes send "null" or nothing for tools
// without arguments, so an empty input is an empty object.
func decodeInput(tool string, raw json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return errs.E(errs.Invalid, "The %s tool was called with invalid arguments: %v. Please rewrite the input so it satisfies the expected schema.", tool, err)
	}
	return nil
}

// flexInt is an optional integer that also accepts a number written as a string ("20"), which models
// produce often enough that refusing it would only waste a turn.
type flexInt struct {
	Set   bool
	Value int
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*f = flexInt{}
		return nil
	}
	if unquoted, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(unquoted)
		if s == "" {
			*f = flexInt{}
			return nil
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n != float64(int(n)) {
		return fmt.Errorf("%s is not a whole number", string(b))
	}
	*f = flexInt{Set: true, Value: int(n)}
	return nil
}

func invalid(format string, args ...any) error {
	return errs.E(errs.Invalid, format, args...)
}

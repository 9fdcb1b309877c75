package servercmd

import (
	"errors"
	"strings"
)

// usageError marks a bad flag or environment value (exit 2).
type usageError struct{ error }

func asUsage(err error, target *usageError) bool {
	if errors.As(err, target) {
		return true
	}
	// cobra's own flag errors.
	s := err.Error()
	return strings.HasPrefix(s, "unknown flag") || strings.HasPrefix(s, "unknown command") ||
		strings.Contains(s, "invalid argument") || strings.HasPrefix(s, "accepts ")
}

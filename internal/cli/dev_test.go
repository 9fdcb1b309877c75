package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestDevUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", filepath.Join(t.TempDir(), "missing")}, "not a directory"},
		{[]string{"dev", "--port", "-1", "."}, "--port"},
		{[]string{"dev", "--port", "70000", "."}, "--port"},
		{[]string{"dev", "a", "b"}, "accepts at most 1 arg"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(tc.args, nil, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want %d mentioning %q", tc.args, code, errOut.String(), ExitUsage, tc.want)
		}
	}
}

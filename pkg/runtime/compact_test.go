package runtime

import "testing"

// The socket tests again, every client on the compact protocol (its frames
// read back as the JSON protocol's by internal/compact's decoder).
func TestCompactProtocol(t *testing.T) {
	for name, test := range map[string]func(*testing.T){
		"JoinAppearChangeGone": TestJoinAppearChangeGone,
		"Resume":               TestResume,
		"PrecisionOnTheWire":   TestPrecisionOnTheWire,
	} {
		t.Run(name, func(t *testing.T) {
			dialCompact = true
			defer func() { dialCompact = false }()
			test(t)
		})
	}
}

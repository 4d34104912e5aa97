package agent

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestUploadDecodedLenMatchesDecoding(t *testing.T) {
	for n := 0; n < 40; n++ {
		s := base64.StdEncoding.EncodeToString(make([]byte, n))
		if got := decodedLen(s); got != int64(n) {
			t.Errorf("decodedLen(%d bytes encoded) = %d", n, got)
		}
	}
}

func TestUploadFilenameRules(t *testing.T) {
	for _, name := range []string{"résumé-東京.pdf", "a", "report 2026.txt"} {
		if err := checkFilename(name); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "../x", "dir/x", `c:\x`, "a\x00b", "a\nb", strings.Repeat("é", 200), "\xff"} {
		if errcode.Of(checkFilename(name)) != errcode.InvalidAction {
			t.Errorf("%q accepted", name)
		}
	}
}

package enrollment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// FuzzEnrollRequest decodes and validates arbitrary enrollment requests:
// validation refuses with validation_failed or passes a request whose key
// and signature have the right sizes, and never panics.
func FuzzEnrollRequest(f *testing.F) {
	for _, s := range []string{
		`{"code":"abcdefgh-abcdefgh-abcdefgh-abcdefgh","public_key":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=",` +
			`"hostname":"web-01","os":"Debian GNU/Linux 12","fingerprint":"3f2a9c","agent_version":"1.4.0",` +
			`"nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.bWFj","signature":"` + strings.Repeat("A", 86) + `=="}`,
		`{}`, `{"code":" - - ","hostname":"\u0007","fingerprint":"` + strings.Repeat("x", 129) + `"}`,
		`{"public_key":"!!!","signature":"====","nonce":"."}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req proto.EnrollRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		pub, err := validateRequest(req)
		if err != nil {
			if cairn.ErrorCode(err) != cairn.ECodeValidation {
				t.Fatalf("refusal is not validation_failed: %v", err)
			}
			return
		}
		if len(pub) != 32 || NormalizeCode(req.Code) == "" || strings.TrimSpace(req.Hostname) == "" {
			t.Fatalf("accepted %+v", req)
		}
		_ = hashCode(req.Code)
	})
}

// FuzzNonceUse offers arbitrary nonces, and tampered copies of a real
// one: each is refused as validation_failed, before any database work,
// and the real nonce still works afterwards.
func FuzzNonceUse(f *testing.F) {
	n, _ := setupNonces(f)
	issued, _, err := n.Issue(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	body, mac, _ := strings.Cut(issued, ".")
	for _, s := range []string{issued + "x", body + ".", "." + mac, "no-dot", "", "a.b.c", strings.ToUpper(body) + "." + mac, body + "." + mac + "=="} {
		f.Add(s)
	}
	f.Cleanup(func() {
		if err := n.Use(context.Background(), issued); err != nil {
			f.Errorf("the real nonce was used up by refused copies: %v", err)
		}
	})
	f.Fuzz(func(t *testing.T, nonce string) {
		if nonce == issued {
			return
		}
		if err := n.Use(context.Background(), nonce); cairn.ErrorCode(err) != cairn.ECodeValidation {
			t.Fatalf("nonce %q: %v", nonce, err)
		}
	})
}

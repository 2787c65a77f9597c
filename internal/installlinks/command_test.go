package installlinks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCommand(t *testing.T) {
	t.Parallel()
	link := "https://cairn.example/api/agent/install/download/linux-amd64?artifact=a&download_signature=s&expires=e&site_id=1"
	require.Equal(t,
		`f=$(mktemp) && curl -fsSL -o "$f" '`+link+`' && chmod 0755 "$f" && sudo "$f" install --server https://cairn.example --code '<enrollment-code>' && rm -f "$f"`,
		Command("linux-amd64", link, "https://cairn.example", CodePlaceholder))
	require.Equal(t,
		`f=$(mktemp) && curl -fsSL -o "$f" '`+link+`' && chmod 0755 "$f" && sudo "$f" install --server 'https://x/it'\''s' --code abc-def && rm -f "$f"`,
		Command("linux-amd64", link, "https://x/it's", "abc-def"), "quotes what needs quoting")
	require.Equal(t,
		"$f = Join-Path $env:TEMP ('cairn-agent-' + [guid]::NewGuid() + '.exe'); Invoke-WebRequest -UseBasicParsing -Uri '"+link+
			"' -OutFile $f; & $f install --server 'https://cairn.example' --code 'it''s'",
		Command("windows-amd64", link, "https://cairn.example", "it's"))
}

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	exp := time.Date(2030, 1, 8, 12, 0, 0, 0, time.UTC)
	tok := Token(42, exp, "linux-amd64-0123456789abcdef", "c2lnbmF0dXJl_-")
	require.Equal(t, "42.1894104000.linux-amd64-0123456789abcdef.c2lnbmF0dXJl_-", tok)
	req := ParseToken(tok, "linux-amd64")
	require.Equal(t, Request{Platform: "linux-amd64", SiteID: "42", Expires: "1894104000",
		ArtifactID: "linux-amd64-0123456789abcdef", Signature: "c2lnbmF0dXJl_-"}, req)
	got, ok := parseExpiry(req.Expires)
	require.True(t, ok)
	require.Equal(t, exp, got)
	got, ok = parseExpiry("2030-01-08T13:00:00+01:00")
	require.True(t, ok)
	require.Equal(t, exp, got, "the same instant in another zone signs the same")
	for _, bad := range []string{"", "tomorrow", "-5", "0"} {
		_, ok := parseExpiry(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, Request{Platform: "linux-amd64"}, ParseToken("1.2.3", "linux-amd64"), "a malformed token claims nothing")
}

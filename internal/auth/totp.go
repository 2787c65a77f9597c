package auth

import (
	"crypto/subtle"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

const (
	totpPeriod = 30
	totpIssuer = "Cairn"
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// MFASetup is what an operator needs to add Cairn to an authenticator app.
type MFASetup struct {
	Secret     string // base32
	OTPAuthURL string
}

func newTOTP(username string) (MFASetup, error) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: totpIssuer, AccountName: username, Period: totpPeriod,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1, SecretSize: 20,
	})
	if err != nil {
		return MFASetup{}, err
	}
	return MFASetup{Secret: key.Secret(), OTPAuthURL: key.URL()}, nil
}

// matchTOTP returns the time step the code belongs to, accepting one step of
// skew either way, or 0 when it matches none. The caller refuses steps not
// newer than the last accepted one, which stops replays.
func matchTOTP(secret, code string, now time.Time) int64 {
	if len(code) != 6 {
		return 0
	}
	cur := now.Unix() / totpPeriod
	for _, step := range []int64{cur, cur - 1, cur + 1} {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0), totpOpts)
		if err != nil {
			return 0
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return step
		}
	}
	return 0
}

package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Pending-MFA tokens bridge the password step and the code step. They are
// signed (HS256, a key the Engine generates and keeps sealed in PostgreSQL
// so every replica accepts them), short-lived and single use.
const (
	pendingTTL      = 5 * time.Minute
	pendingAudience = "cairn-mfa"

	purposeLogin     = "login"
	purposeBootstrap = "bootstrap"
)

type pendingClaims struct {
	Purpose string `json:"purpose"`
	jwt.RegisteredClaims
}

type pending struct {
	UserID  int64
	Purpose string
	JTI     string
	Expires time.Time
}

func signPending(ctx context.Context, k *aegis.ServerKey, userID int64, purpose string, now time.Time) (string, error) {
	key, err := k.Secret(ctx)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := pendingClaims{
		Purpose: purpose,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
			Audience:  jwt.ClaimStrings{pendingAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(pendingTTL)),
			ID:        hex.EncodeToString(jti),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
}

func parsePending(ctx context.Context, k *aegis.ServerKey, tok string, now time.Time) (pending, error) {
	key, err := k.Secret(ctx)
	if err != nil {
		return pending{}, err
	}
	var claims pendingClaims
	_, err = jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(pendingAudience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return pending{}, err
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || claims.ID == "" {
		return pending{}, errors.New("auth: pending token without subject or id")
	}
	return pending{UserID: id, Purpose: claims.Purpose, JTI: claims.ID, Expires: claims.ExpiresAt.Time}, nil
}

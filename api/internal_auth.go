package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

type internalKeyKey struct{}

// internalCaller is the key ID that signed an Internal request.
func internalCaller(ctx context.Context) string {
	k, _ := ctx.Value(internalKeyKey{}).(string)
	return k
}

// requireInternal checks an Internal request's HMAC signature
// (internal/internalauth): it reads the body (within maxBody) to hash it
// and hands the handler the same bytes.
func (s *Server) requireInternal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Internal == nil {
			writeError(w, r, s.Log, cairn.Errorf(internalauth.ECodeSignatureInvalid, "this process accepts no internal requests"))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeTooLarge, "the body is larger than %d bytes", maxBody))
				return
			}
			writeError(w, r, s.Log, cairn.Invalid("body", "the body could not be read"))
			return
		}
		keyID, err := s.Internal.Verify(r.Context(), r.Method, r.URL.RequestURI(), body, r.Header)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if e := auditFrom(r); e != nil {
			e.Username, e.Role = "internal:"+keyID, "internal"
		}
		addLogAttrs(r, "internal_key_id", keyID)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), internalKeyKey{}, keyID)))
	})
}

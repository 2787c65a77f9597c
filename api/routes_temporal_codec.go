package api

import (
	"io"
	"net/http"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairn-rmm/cairn"
)

// The codec server (issue 21 item 1; docs/api.md "Temporal codec server").
// Workflow histories hold payloads sealed by the Engine's payload keys; the
// Temporal UI shows them decoded by POSTing them here from the browser of a
// signed-in administrator, with the session cookie ("include cross-origin
// credentials" in the UI's codec settings). API tokens are refused: the
// codec reads every history, which is an administrator's session's to do.
// Neither encode nor decode changes anything, so the UI (which cannot send
// the console's CSRF header) needs none; only the Temporal UI origins
// configured (Deps.TemporalUIOrigins) may read the answers (CORS).

// codecMaxBody bounds one request: a history page's payloads (Temporal caps
// one payload at 2 MiB by default).
const codecMaxBody = 16 << 20

const codecPath = "/api/temporal/codec"

func (s *Server) temporalCodecRoutes() []Route {
	preflight := raw(s.codecPreflight).Out(http.StatusNoContent, nil).Summary("CORS preflight of the codec server")
	return []Route{
		{"OPTIONS", codecPath + "/decode", AuthNone, preflight, "Preflight the codec decode"},
		{"OPTIONS", codecPath + "/encode", AuthNone, preflight, "Preflight the codec encode"},
		{"POST", codecPath + "/decode", AuthAdmin, s.sessionOnly(raw(s.codecServe(false)).noCSRF().Stream(http.StatusOK, "application/json").
			Summary("Decode Temporal payloads for the Temporal UI")), "Decode Temporal payloads"},
		{"POST", codecPath + "/encode", AuthAdmin, s.sessionOnly(raw(s.codecServe(true)).noCSRF().Stream(http.StatusOK, "application/json").
			Summary("Encode Temporal payloads for the Temporal UI")), "Encode Temporal payloads"},
	}
}

// allowCodecOrigin answers CORS for a configured Temporal UI origin.
func (s *Server) allowCodecOrigin(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.Contains(s.TemporalUIOrigins, strings.TrimRight(origin, "/")) {
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Add("Vary", "Origin")
}

func (s *Server) codecPreflight(w http.ResponseWriter, r *http.Request) {
	s.allowCodecOrigin(w, r)
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) codecServe(encode bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.allowCodecOrigin(w, r)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, codecMaxBody))
		if err != nil {
			writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeTooLarge, "at most %d bytes of payloads at once", codecMaxBody))
			return
		}
		var in commonpb.Payloads
		if err := protojson.Unmarshal(body, &in); err != nil {
			writeError(w, r, s.Log, cairn.Invalid("payloads", "must be Temporal payloads as JSON: {\"payloads\": [...]}"))
			return
		}
		var out []*commonpb.Payload
		if encode {
			out, err = s.PayloadCodec.Encode(in.Payloads)
		} else {
			out, err = s.PayloadCodec.Decode(in.Payloads)
		}
		if err != nil {
			// A payload of another deployment, or sealed before a force
			// reset: the cause is logged, the client told what failed.
			s.Log.Warn("codec server", "encode", encode, "err", err)
			writeError(w, r, s.Log, cairn.Invalid("payloads", "a payload could not be "+map[bool]string{true: "encoded", false: "decoded"}[encode]+
				" with this deployment's payload keys"))
			return
		}
		raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(raw)
	}
}

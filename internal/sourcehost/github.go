package sourcehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
)

// maxUpstreamBody bounds what is read from the source host: the answers
// used here are a few kilobytes.
const maxUpstreamBody = 1 << 20

var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// errUnauthorized is the source host refusing the token (HTTP 401); callers
// turn it into an error naming the token's source.
var errUnauthorized = errors.New("sourcehost: token refused")

// get calls the source host API and decodes a 200 JSON answer into dst.
// The token is sent only when there is one: public repositories answer
// anonymous calls (with a lower rate limit).
func (s *Service) get(ctx context.Context, path, token string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.APIURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "cairn-engine")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := s.cfg.HTTP.Do(req)
	if err != nil {
		// The cause names internal addresses; the client learns only that
		// the source host is unreachable.
		return unavailable("could not reach the source host")
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxUpstreamBody))
	if err != nil {
		return unavailable("the source host's answer was cut off")
	}
	switch {
	case res.StatusCode == http.StatusOK:
		if err := json.Unmarshal(body, dst); err != nil {
			return unavailable("the source host answered something that is not JSON")
		}
		return nil
	case res.StatusCode == http.StatusUnauthorized:
		return errUnauthorized
	case res.StatusCode == http.StatusNotFound:
		return cairn.Errorf(cairn.ECodeNotFound, "the source host has no such repository or branch (or the token cannot see it)")
	case (res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusTooManyRequests) &&
		res.Header.Get("X-RateLimit-Remaining") == "0":
		return rateLimited(res.Header.Get("X-RateLimit-Reset"), s.cfg.Now())
	case res.StatusCode == http.StatusForbidden:
		return cairn.Errorf(cairn.ECodeNotFound, "the source host refused access to that repository (or the token cannot see it)")
	}
	return unavailable("the source host answered HTTP %d", res.StatusCode)
}

// RateLimit is the source host's core API budget for a token.
type RateLimit struct {
	Limit     int
	Remaining int
	ResetAt   time.Time
}

// rateLimit reads the budget of token from GET /rate_limit (a call that
// does not count against it).
func (s *Service) rateLimit(ctx context.Context, token string) (RateLimit, error) {
	var body struct {
		Rate struct {
			Limit     int   `json:"limit"`
			Remaining int   `json:"remaining"`
			Reset     int64 `json:"reset"`
		} `json:"rate"`
	}
	if err := s.get(ctx, "/rate_limit", token, &body); err != nil {
		return RateLimit{}, err
	}
	return RateLimit{Limit: body.Rate.Limit, Remaining: body.Rate.Remaining, ResetAt: time.Unix(body.Rate.Reset, 0).UTC()}, nil
}

// branchHead asks for the head commit of branch in repo (owner/name, both
// already validated).
func (s *Service) branchHead(ctx context.Context, repo, branch, token string) (string, error) {
	segs := strings.Split(branch, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	var body struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	if err := s.get(ctx, "/repos/"+repo+"/branches/"+strings.Join(segs, "/"), token, &body); err != nil {
		return "", err
	}
	if !shaPattern.MatchString(body.Commit.SHA) {
		return "", unavailable("the source host answered without a commit hash")
	}
	return body.Commit.SHA, nil
}

func unavailable(format string, args ...any) error {
	return cairn.Errorf(cairn.ECodeUnavailable, format, args...)
}

func rateLimited(reset string, now time.Time) error {
	e := cairn.Errorf(cairn.ECodeRateLimited, "the source host's rate limit for this token is used up")
	if at, err := strconv.ParseInt(reset, 10, 64); err == nil {
		if wait := time.Unix(at, 0).Sub(now); wait > 0 {
			e.RetryAfterSeconds = int(wait.Seconds()) + 1
			e.Message = fmt.Sprintf("%s; it resets in %d seconds", e.Message, e.RetryAfterSeconds)
		}
	}
	if e.RetryAfterSeconds == 0 {
		e.RetryAfterSeconds = 60
	}
	return e
}

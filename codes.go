package cairn

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
)

// Code declares one stable error code: what the API answers it with, whether
// the same request may succeed when tried again, and whether an agent may
// answer an operation with it. Each capability declares the codes its domain
// returns (engine/capability_*.go); the Engine gathers them into a CodeBook,
// from which the API's statuses, the retry decisions of activities and the
// agent gateway's allow-list are read. A code nobody declared is answered
// 400 and never passed on from an agent.
type Code struct {
	ID string
	// Status is the HTTP status the API answers the code with.
	Status int
	// Retryable: the code names a passing condition (a dependency
	// overloaded or briefly away, a rate limit); retries follow this, not
	// the call site.
	Retryable bool
	// Agent: an agent may answer an operation with this code and the
	// Engine passes it on (any other agent code becomes op_failed).
	Agent bool
}

// CoreCodes are the codes every capability shares: request shape,
// authentication, the cipher, availability.
var CoreCodes = []Code{
	{ID: ECodeValidation, Status: http.StatusBadRequest},
	{ID: ECodeUnauthorized, Status: http.StatusUnauthorized},
	{ID: ECodeInvalidCredentials, Status: http.StatusUnauthorized},
	{ID: ECodeInvalidMFACode, Status: http.StatusUnauthorized},
	{ID: ECodeInvalidPending, Status: http.StatusUnauthorized},
	{ID: ECodeInvalidPassphrase, Status: http.StatusUnauthorized},
	{ID: ECodeInvalidDPoPProof, Status: http.StatusUnauthorized},
	{ID: ECodeForbidden, Status: http.StatusForbidden},
	{ID: ECodeCSRF, Status: http.StatusForbidden},
	{ID: ECodeBootstrapFinished, Status: http.StatusForbidden},
	{ID: ECodeRecoveryRequired, Status: http.StatusForbidden},
	{ID: ECodeNotFound, Status: http.StatusNotFound},
	{ID: ECodeMethodNotAllowed, Status: http.StatusMethodNotAllowed},
	{ID: ECodeConflict, Status: http.StatusConflict},
	{ID: ECodeWrongPhase, Status: http.StatusConflict},
	{ID: ECodeBootstrapRequired, Status: http.StatusConflict},
	{ID: ECodeAegisConfigured, Status: http.StatusConflict},
	{ID: ECodeSiteNotEmpty, Status: http.StatusConflict},
	{ID: ECodePasskeysUnavailable, Status: http.StatusConflict},
	{ID: ECodeLastAdmin, Status: http.StatusConflict},
	{ID: ECodeAgentSocketMissing, Status: http.StatusConflict},
	{ID: ECodeWrongWorker, Status: http.StatusMisdirectedRequest},
	{ID: ECodeTooLarge, Status: http.StatusRequestEntityTooLarge},
	{ID: ECodeUnsupportedMedia, Status: http.StatusUnsupportedMediaType},
	{ID: ECodeAegisLocked, Status: http.StatusLocked},
	{ID: ECodeRateLimited, Status: http.StatusTooManyRequests, Retryable: true},
	{ID: ECodeInternal, Status: http.StatusInternalServerError},
	{ID: ECodeUnavailable, Status: http.StatusServiceUnavailable, Retryable: true},
	{ID: ECodeScopeRequired, Status: http.StatusForbidden},
	// The device's agent lacks a capability the route needs (every
	// capability that reaches agents answers it).
	{ID: ECodeAgentTooOld, Status: http.StatusConflict},
}

// CodeBook is a set of declared codes.
type CodeBook struct {
	byID map[string]Code
}

// NewCodeBook gathers declarations. A code declared twice must have the
// same status and retryability: two capabilities that disagree are a
// programming error the Engine refuses to start with. Agent adds up: a
// capability that passes an agent's not_found on declares it so, while the
// core declares not_found for its own routes.
func NewCodeBook(decls ...[]Code) (*CodeBook, error) {
	b := &CodeBook{byID: map[string]Code{}}
	var errs []error
	for _, list := range decls {
		for _, c := range list {
			if c.ID == "" || c.Status < 400 || c.Status > 599 {
				errs = append(errs, fmt.Errorf("code %q: a code needs an ID and a 4xx or 5xx status", c.ID))
				continue
			}
			if have, ok := b.byID[c.ID]; ok {
				if have.Status != c.Status || have.Retryable != c.Retryable {
					errs = append(errs, fmt.Errorf("code %q declared twice, differently: %+v and %+v", c.ID, have, c))
					continue
				}
				c.Agent = c.Agent || have.Agent
			}
			b.byID[c.ID] = c
		}
	}
	return b, errors.Join(errs...)
}

// MustCodeBook is NewCodeBook for declarations fixed at compile time.
func MustCodeBook(decls ...[]Code) *CodeBook {
	b, err := NewCodeBook(decls...)
	if err != nil {
		panic(err)
	}
	return b
}

// Lookup returns the declaration of id.
func (b *CodeBook) Lookup(id string) (Code, bool) {
	c, ok := b.byID[id]
	return c, ok
}

// Status is the HTTP status of id; an undeclared code is a 400.
func (b *CodeBook) Status(id string) int {
	if c, ok := b.byID[id]; ok {
		return c.Status
	}
	return http.StatusBadRequest
}

// Transient reports whether err is a domain error whose code is declared
// retryable.
func (b *CodeBook) Transient(err error) bool {
	var e *Error
	return errors.As(err, &e) && b.byID[e.Code].Retryable
}

// FromAgent reports whether an agent may answer an operation with id.
func (b *CodeBook) FromAgent(id string) bool { return b.byID[id].Agent }

// coreBook answers for requests that reach no Engine's book (a Server built
// without one in a test).
var coreBook = MustCodeBook(CoreCodes)

// CoreBook is the book of CoreCodes alone.
func CoreBook() *CodeBook { return coreBook }

// declared is the process's book, which Transient reads: activities turn
// domain errors into Temporal errors far from any Engine value, and every
// Engine of a process is built from the same capability list.
var declared atomic.Pointer[CodeBook]

// Declare makes b the process's book (engine.New calls it with every
// capability's codes).
func Declare(b *CodeBook) { declared.Store(b) }

// Declared is the process's book: what Declare last set, else the core.
func Declared() *CodeBook {
	if b := declared.Load(); b != nil {
		return b
	}
	return coreBook
}

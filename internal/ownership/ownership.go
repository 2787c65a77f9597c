// Package ownership decides who may change a shared automation object: an
// assembly, a flow (/api/workflows) or a saved device filter. Each has an
// owner and a site scope, the union of the scopes of everyone who saved
// it (every site once an administrator has). Only a caller whose scope
// covers the object's may change or delete it, and not even then while
// saved work of a caller with a broader scope depends on it: the work
// would run what a narrower caller chose on sites that caller cannot
// reach (docs/api.md "Shared objects: owner and scope").
package ownership

import (
	"fmt"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// Dependant kinds.
const (
	KindScheduledJob = "scheduled_job"
	KindWorkflow     = "workflow"
)

// Editor is who saves or deletes a shared object.
type Editor struct {
	UserID   int64
	Username string
	Scope    cairn.SiteScope
}

// System is the Engine itself (seeding, imports): every site.
var System = Editor{Username: "system", Scope: cairn.AllSites}

// Owner is the owner column of an object the editor creates (NULL for
// the Engine itself).
func (e Editor) Owner() *int64 {
	if e.UserID == 0 {
		return nil
	}
	id := e.UserID
	return &id
}

// Dependant is saved work that uses an object, with the scope of who
// saved it.
type Dependant struct {
	Kind  string
	ID    int64
	Name  string
	Scope cairn.SiteScope
}

// CheckChange refuses a change by e to object what (e.g. "assembly 3")
// of scope object that deps depend on: forbidden when e's scope does not
// cover the object's, dependants_exist (listing them) when any
// dependant's scope reaches beyond e's.
func CheckChange(e Editor, what string, object cairn.SiteScope, deps []Dependant) error {
	if !e.Scope.Covers(object) {
		return cairn.Errorf(cairn.ECodeForbidden, "%s is shared with sites outside yours; only an administrator, or a user whose sites cover all of them, may change it", what)
	}
	var broader []cairn.Dependant
	var names []string
	for _, d := range deps {
		if !e.Scope.Covers(d.Scope) {
			broader = append(broader, cairn.Dependant{Kind: d.Kind, ID: d.ID, Name: d.Name})
			names = append(names, fmt.Sprintf("%s %d %q", strings.ReplaceAll(d.Kind, "_", " "), d.ID, d.Name))
		}
	}
	if len(broader) > 0 {
		return &cairn.Error{Code: cairn.ECodeDependantsExist, Dependants: broader,
			Message: fmt.Sprintf("%s is used by work saved by someone with more sites than yours (%s); an administrator must change it, or the work must stop using it",
				what, strings.Join(names, ", "))}
	}
	return nil
}

// Scope is the scope an object has after e saves it: what it had joined
// with e's.
func Scope(e Editor, had cairn.SiteScope) cairn.SiteScope { return had.Union(e.Scope) }

package flows

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// EditSteps changes a flow's steps ("nodes" in the API) one at a time:
// change gets the saved steps and returns the new ones, which are checked
// and saved as Update saves a whole flow (same pins, scope and dependant
// rules).
func (s *Service) EditSteps(ctx context.Context, by ownership.Editor, id int64, change func([]Step) ([]Step, error)) (Flow, error) {
	f, err := s.Get(ctx, id)
	if err != nil {
		return Flow{}, err
	}
	steps, err := change(slices.Clone(f.Steps))
	if err != nil {
		return Flow{}, err
	}
	return s.Update(ctx, by, id, Input{Name: f.Name, Description: f.Description, Steps: steps})
}

func stepIndex(steps []Step, id string) (int, error) {
	i := slices.IndexFunc(steps, func(s Step) bool { return s.ID == id })
	if i < 0 {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "workflow node %q not found", id)
	}
	return i, nil
}

// InsertStep adds st at position (nil: last). A new step needs an ID of
// its own so later edits can name it.
func InsertStep(steps []Step, st Step, position *int) ([]Step, error) {
	if st.ID == "" {
		return nil, cairn.Invalid("id", "a new node needs an ID")
	}
	at := len(steps)
	if position != nil {
		if *position < 0 || *position > len(steps) {
			return nil, cairn.Invalid("position", fmt.Sprintf("must be 0 to %d", len(steps)))
		}
		at = *position
	}
	return slices.Insert(steps, at, st), nil
}

// ReplaceStep replaces step id with st (which keeps id when it names none).
func ReplaceStep(steps []Step, id string, st Step) ([]Step, error) {
	i, err := stepIndex(steps, id)
	if err != nil {
		return nil, err
	}
	if st.ID == "" {
		st.ID = id
	}
	steps[i] = st
	return steps, nil
}

// RemoveStep removes step id; the last step of a flow stays (a flow has
// at least one).
func RemoveStep(steps []Step, id string) ([]Step, error) {
	i, err := stepIndex(steps, id)
	if err != nil {
		return nil, err
	}
	return slices.Delete(steps, i, i+1), nil
}

package activities

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
)

// AgentCommands sends operations to agents: the one activity every
// Engine-to-agent capability runs (the command path, docs/architecture.md).
type AgentCommands struct {
	Gateway *agentgateway.Hub
	Devices *devices.Service
	Grants  *grants.Service
}

// CommandInput is one operation's request to an agent.
type CommandInput struct {
	OperationID cairn.OperationID
	GUID        cairn.DeviceGUID
	// Type is the spec's event name (proto.Event*).
	Type    string
	Payload []byte
	// Grant is the API's signature over exactly this request
	// (internal/grants): without one that verifies nothing is sent.
	Grant string
}

// SendToAgent stores the request and writes it to the agent's socket wherever it
// is, then returns "result pending": the process that receives the reply
// completes this activity by its task token. A device that is no longer
// trusted fails for good; a missing socket is retried (the agent may be
// reconnecting) until the activity's deadline. The request goes out only
// under a grant for exactly it: Temporal is a trust boundary, and whoever
// can start a workflow there must not be able to make an agent act.
func (a *AgentCommands) SendToAgent(ctx context.Context, in CommandInput) (agentgateway.Reply, error) {
	err := a.Grants.Verify(ctx, in.Grant, grants.Operation{GUID: in.GUID, OperationID: in.OperationID, Type: in.Type, Payload: in.Payload})
	if cairn.IsCode(err, grants.ECodeNotGranted) {
		activity.GetLogger(ctx).Warn("refused an operation without a valid grant", "device", in.GUID, "operation", in.OperationID,
			"type", in.Type, "reason", err.Error())
	}
	if err != nil {
		return agentgateway.Reply{}, ApplicationError(err)
	}
	if err := a.Devices.CheckOperable(ctx, in.GUID); err != nil {
		return agentgateway.Reply{}, ApplicationError(err)
	}
	info := activity.GetInfo(ctx)
	expires := info.ScheduledTime.Add(24 * time.Hour)
	if !info.Deadline.IsZero() {
		expires = info.Deadline.Add(time.Minute)
	}
	// The agent checks this before it acts: it trusts the script key,
	// not Temporal, the database or this activity's input.
	agentGrant, err := a.Grants.AgentGrant(ctx, grants.Operation{GUID: in.GUID, OperationID: in.OperationID, Type: in.Type,
		Payload: in.Payload}, expires)
	if err != nil {
		return agentgateway.Reply{}, err // retried: a rotation in progress, or a database fault
	}
	err = a.Gateway.Dispatch(ctx, agentgateway.Request{ID: uuid.NewString(), OperationID: in.OperationID, GUID: in.GUID,
		Type: in.Type, Payload: in.Payload, TaskToken: info.TaskToken, ExpiresAt: expires, Grant: agentGrant})
	if err != nil {
		if cairn.IsCode(err, cairn.ECodeAgentSocketMissing) {
			return agentgateway.Reply{}, temporal.NewApplicationError(err.Error(), cairn.ECodeAgentSocketMissing)
		}
		return agentgateway.Reply{}, ApplicationError(err)
	}
	return agentgateway.Reply{}, activity.ErrResultPending
}

// ApplicationError turns a domain error into a Temporal application error
// of the same code. Whether Temporal retries it comes from the code's
// declaration (cairn.Transient): a transient code (unavailable: Temporal
// or another dependency too busy; rate_limited) is retried, after the
// error's Retry-After when it has one; any other code is non-retryable,
// since the domain has decided. Faults stay plain errors, which Temporal
// retries.
func ApplicationError(err error) error {
	var ce *cairn.Error
	if !errors.As(err, &ce) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(ce.Message, ce.Code, temporal.ApplicationErrorOptions{
		NonRetryable:   !cairn.Transient(ce),
		NextRetryDelay: time.Duration(ce.RetryAfterSeconds) * time.Second,
	})
}

// Completer completes command-path activities through the Temporal client
// (agentgateway.Completer).
type Completer struct {
	Client client.Client
}

// Complete finishes the activity with the agent's reply.
func (c Completer) Complete(ctx context.Context, token []byte, reply agentgateway.Reply) error {
	return gone(c.Client.CompleteActivity(ctx, token, reply, nil))
}

// Fail finishes the activity with an application error of type code.
func (c Completer) Fail(ctx context.Context, token []byte, code, message string, retryable bool) error {
	var err error
	if retryable {
		err = temporal.NewApplicationError(message, code)
	} else {
		err = temporal.NewNonRetryableApplicationError(message, code, nil)
	}
	return gone(c.Client.CompleteActivity(ctx, token, nil, err))
}

// Heartbeat keeps the activity alive while its agent works.
func (c Completer) Heartbeat(ctx context.Context, token []byte) error {
	return gone(c.Client.RecordActivityHeartbeat(ctx, token))
}

// gone says not_found for an activity that no longer waits (completed,
// timed out, cancelled), so the gateway stops tracking it.
func gone(err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return cairn.Errorf(cairn.ECodeNotFound, "the activity no longer waits: %v", err)
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return cairn.Errorf(cairn.ECodeNotFound, "the activity no longer waits: %v", err)
	}
	return err
}

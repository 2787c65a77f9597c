// How a refused or failed device operation is told to the operator. Trust and
// connectivity refusals are not faults of the action, so they are warnings in
// plain words; everything else is an error with the Engine's message.
import { describeError, errorCode } from '../../components/errors';
import type { LocalToast } from '../../toasts/notify';

const WARNINGS: Record<string, { title: string; message: string }> = {
  device_quarantined: {
    title: 'Device quarantined',
    message: 'Remote operations on a quarantined device are blocked. An administrator must unquarantine it first.',
  },
  device_revoked: {
    title: 'Device revoked',
    message: 'This device is revoked. It must enroll again and be approved before it can be managed.',
  },
  role_stopped: {
    title: 'Role stopped',
    message: 'The agent role that serves this is stopped on the device. Start it from the Roles section of Agent Health.',
  },
  agent_socket_missing: {
    title: 'Agent not connected',
    message: 'The agent is not connected to the Engine right now. Try again once it is back online.',
  },
};

// Codes whose Engine message would not tell the operator what to do next.
const MESSAGES: Record<string, string> = {
  process_mismatch: 'The PID now belongs to another program; refresh the list and try again.',
};

/** The toast for an operation that did not succeed; `what` names it ("Restart nginx.service"). */
export function operationErrorToast(error: unknown, what: string): LocalToast {
  const code = errorCode(error);
  const warning = code ? WARNINGS[code] : undefined;
  if (warning) return { ...warning, variant: 'warning', icon: 'warning' };
  const message = (code && MESSAGES[code]) || describeError(error);
  return { title: `${what} failed`, message, variant: 'error', icon: 'error', ttlMs: 8000 };
}

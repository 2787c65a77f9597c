// Account and directory administration needs a session whose operator
// re-authenticated within the last minutes (docs/api.md
// "Re-authentication"). withSudo runs such a request; when the Engine
// answers reauthentication_required it asks the operator to confirm who
// they are (the SudoGate dialog), then sends the request once more.
import { ApiError } from './client';

type Gate = () => Promise<boolean>;

let gate: Gate | null = null;
let asking: Promise<boolean> | null = null;

/** Installs the prompt (SudoGate); returns the uninstaller. */
export function setSudoGate(g: Gate): () => void {
  gate = g;
  return () => {
    if (gate === g) gate = null;
  };
}

/** Asks once, however many requests are waiting on the answer. */
function confirmIdentity(): Promise<boolean> {
  if (!gate) return Promise.resolve(false);
  asking ??= gate().finally(() => {
    asking = null;
  });
  return asking;
}

export function isReauthRequired(e: unknown): boolean {
  return e instanceof ApiError && e.code === 'reauthentication_required';
}

export async function withSudo<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (e) {
    if (!isReauthRequired(e) || !(await confirmIdentity())) throw e;
    return request();
  }
}

import { createContext, useContext } from 'react';
import type { ForceResetResult, User } from '../api/types';

export const ME_QUERY = ['auth-me'] as const;

export interface Session {
  user: User;
  signOut: () => Promise<void>;
  /**
   * Hands the codes of a forced cipher reset to the frame above the
   * console: the reset ends every session, this one included, so the
   * console unmounts while the codes must stay on screen.
   */
  cipherReset?: (result: ForceResetResult) => void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in frame');
  return s;
}

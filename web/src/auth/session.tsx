import { createContext, useContext } from 'react';
import type { User } from '../api/types';

export const ME_QUERY = ['auth-me'] as const;

export interface Session {
  user: User;
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in frame');
  return s;
}

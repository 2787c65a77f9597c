import { useEffect, useState } from 'react';
import DialogContentText from '@mui/material/DialogContentText';
import { setSudoGate } from '../api/sudo';
import { call } from '../api/typed';
import type { ReauthProof } from '../passkeys/api';
import { ReauthDialog } from './ReauthDialog';

const reauth = (proof: ReauthProof) => call('post', '/api/auth/reauth', { body: proof });

/**
 * The prompt behind withSudo: when account or directory administration
 * needs a fresh proof of identity, it asks for one (password and code, or
 * a passkey) and opens the session's re-authentication window.
 */
export function SudoGate({ offerPasskey }: { offerPasskey: boolean }) {
  const [answer, setAnswer] = useState<((ok: boolean) => void) | null>(null);
  useEffect(() => setSudoGate(() => new Promise<boolean>((resolve) => setAnswer(() => resolve))), []);
  if (!answer) return null;
  const finish = (ok: boolean) => {
    answer(ok);
    setAnswer(null);
  };
  return (
    <ReauthDialog
      title="Confirm it is you"
      submitLabel="Confirm"
      offerPasskey={offerPasskey}
      action={reauth}
      onDone={() => finish(true)}
      onClose={() => finish(false)}
    >
      <DialogContentText sx={{ mb: 1 }} data-testid="sudo-explainer">
        Managing operators and directories needs a fresh proof of who you are. It lasts 15 minutes.
      </DialogContentText>
    </ReauthDialog>
  );
}

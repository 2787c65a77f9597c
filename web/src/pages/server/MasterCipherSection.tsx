import { useState, type FormEvent } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { aegis, FORCE_RESET_PHRASE } from '../../api/endpoints';
import type { AegisStatus } from '../../api/types';
import { ReauthDialog } from '../../auth/ReauthDialog';
import { useSession } from '../../auth/session';
import { checkConfirmation, checkSecret, MAX_PASSPHRASE } from '../../auth/validation';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';

export const AEGIS_QUERY = ['aegis-status'] as const;

function Row({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <Box sx={{ display: 'flex', py: 0.5 }}>
      <Typography variant="body2" color="text.secondary" sx={{ width: 170, flexShrink: 0 }}>
        {label}
      </Typography>
      <Typography variant="body2" component="div">
        {children}
      </Typography>
    </Box>
  );
}

export function kdfLabel(s: AegisStatus): string {
  if (!s.kdf) return '—';
  return `${s.kdf.algorithm}, ${s.kdf.time} passes, ${Math.round(s.kdf.memory_kib / 1024)} MiB, ${s.kdf.threads} threads`;
}

type Step = 'idle' | 'rotate' | 'rotate-reauth' | 'reset' | 'reset-reauth';

/**
 * The master cipher, for administrators (the Engine refuses everyone
 * else): its state, rotating its passphrase and forcing a reset. Both
 * changes ask the operator to prove again who they are (ReauthDialog).
 */
export function MasterCipherSection() {
  const session = useSession();
  const queryClient = useQueryClient();
  const status = useQuery({ queryKey: AEGIS_QUERY, queryFn: aegis.status });
  const [step, setStep] = useState<Step>('idle');
  const [passphrases, setPassphrases] = useState({ current: '', next: '' });
  const [rotated, setRotated] = useState(false);
  const offerPasskey = session.user.passkey_count > 0;

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mb: 2, maxWidth: 760 }} data-testid="master-cipher">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Master cipher
      </Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 1.5 }}>
        Seals every secret the deployment stores: operator passwords and authenticators, stored credentials, device
        signing keys. Its passphrase unlocks it when an Engine process starts.
      </Typography>
      {status.error ? <ErrorAlert error={status.error} /> : null}
      {status.data && (
        <Box sx={{ mb: 1.5 }}>
          <Row label="State">
            <Chip
              size="small"
              data-testid="cipher-state"
              label={!status.data.configured ? 'Not configured' : status.data.unlocked ? 'Unlocked' : 'Locked'}
              color={status.data.configured && status.data.unlocked ? 'success' : 'warning'}
              variant="outlined"
            />
          </Row>
          <Row label="Algorithm">{status.data.algorithm}</Row>
          <Row label="Key derivation">{kdfLabel(status.data)}</Row>
          <Row label="Created">{formatDateTime(status.data.created_at)}</Row>
          <Row label="Passphrase rotated">
            <span data-testid="cipher-rotated-at">{status.data.rotated_at ? formatDateTime(status.data.rotated_at) : 'Never'}</span>
          </Row>
        </Box>
      )}
      {rotated && (
        <Alert severity="success" sx={{ mb: 1.5 }} data-testid="cipher-rotated" onClose={() => setRotated(false)}>
          Passphrase rotated and every secret re-sealed under a new data key. Other Engine processes are locked until
          someone unlocks them with the new passphrase.
        </Alert>
      )}
      <Box sx={{ display: 'flex', gap: 1 }}>
        <Button variant="outlined" onClick={() => setStep('rotate')} disabled={!status.data?.configured}>
          Rotate passphrase
        </Button>
        <Button variant="outlined" color="error" onClick={() => setStep('reset')} disabled={!status.data?.configured}>
          Force reset
        </Button>
      </Box>

      {step === 'rotate' && (
        <RotateDialog
          initial={passphrases}
          onClose={() => setStep('idle')}
          onNext={(p) => {
            setPassphrases(p);
            setStep('rotate-reauth');
          }}
        />
      )}
      {step === 'rotate-reauth' && (
        <ReauthDialog
          title="Rotate the passphrase"
          submitLabel="Rotate passphrase"
          offerPasskey={offerPasskey}
          action={(proof) => aegis.rotate(passphrases.current, passphrases.next, proof)}
          onDone={(next) => {
            queryClient.setQueryData(AEGIS_QUERY, next);
            setPassphrases({ current: '', next: '' });
            setRotated(true);
            setStep('idle');
          }}
          // Back to the passphrases, kept, so a wrong current one is fixed there.
          onClose={() => setStep('rotate')}
        />
      )}
      {step === 'reset' && <ResetDialog onClose={() => setStep('idle')} onNext={() => setStep('reset-reauth')} />}
      {step === 'reset-reauth' && (
        <ReauthDialog
          title="Force reset the master cipher"
          submitLabel="Reset the master cipher"
          offerPasskey={offerPasskey}
          // The reset ends this session too: hand the codes over inside
          // the action, before anything can unmount this page.
          action={async (proof) => {
            const result = await aegis.forceReset(proof);
            session.cipherReset?.(result);
            return result;
          }}
          onDone={() => setStep('idle')}
          onClose={() => setStep('idle')}
        />
      )}
    </Paper>
  );
}

function RotateDialog({
  initial,
  onClose,
  onNext,
}: {
  initial: { current: string; next: string };
  onClose: () => void;
  onNext: (p: { current: string; next: string }) => void;
}) {
  const [current, setCurrent] = useState(initial.current);
  const [next, setNext] = useState(initial.next);
  const [confirm, setConfirm] = useState(initial.next);
  const [errors, setErrors] = useState<Record<string, string | null>>({});

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = {
      current: current ? null : 'Enter the current passphrase.',
      next: checkSecret(next, 'The new passphrase', MAX_PASSPHRASE),
      confirm: checkConfirmation(next, confirm),
    };
    setErrors(found);
    if (!Object.values(found).some(Boolean)) onNext({ current, next });
  };

  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Rotate the passphrase</DialogTitle>
        <DialogContent>
          <DialogContentText sx={{ mb: 2, fontSize: 14 }}>
            A new data key replaces the old one and every sealed secret is re-sealed with it. Engine processes other
            than this one lock and need the new passphrase to unlock. Keep the new passphrase where your team keeps
            recovery material: without it a restarted Engine cannot open its secrets.
          </DialogContentText>
          <TextField
            label="Current passphrase"
            name="current_passphrase"
            type="password"
            autoComplete="off"
            autoFocus
            fullWidth
            value={current}
            onChange={(e) => setCurrent(e.target.value)}
            error={Boolean(errors.current)}
            helperText={errors.current ?? ' '}
          />
          <TextField
            label="New passphrase"
            name="new_passphrase"
            type="password"
            autoComplete="new-password"
            fullWidth
            value={next}
            onChange={(e) => setNext(e.target.value)}
            error={Boolean(errors.next)}
            helperText={errors.next ?? 'At least 12 characters. It may equal the current one to replace only the data key.'}
          />
          <TextField
            label="Repeat the new passphrase"
            name="confirm_passphrase"
            type="password"
            autoComplete="new-password"
            fullWidth
            value={confirm}
            onChange={(e) => setConfirm(e.target.value)}
            error={Boolean(errors.confirm)}
            helperText={errors.confirm ?? ' '}
            sx={{ mt: 1 }}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="contained">
            Continue
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

function ResetDialog({ onClose, onNext }: { onClose: () => void; onNext: () => void }) {
  const [typed, setTyped] = useState('');
  const confirmed = typed === FORCE_RESET_PHRASE;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (confirmed) onNext();
  };
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="sm">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Force reset the master cipher?</DialogTitle>
        <DialogContent>
          <Alert severity="error" sx={{ mb: 2 }} data-testid="force-reset-consequences">
            This is for a lost passphrase. It cannot be undone:
            <Box component="ul" sx={{ m: 0, mt: 1, pl: 2.5 }}>
              <li>The cipher is deleted; every secret it sealed can no longer be read.</li>
              <li>Every session ends, yours included; no one can sign in until an administrator is recovered.</li>
              <li>
                Every local account must be recovered with a new password and authenticator, and loses its passkeys.
              </li>
              <li>Stored credentials must be entered again.</li>
            </Box>
          </Alert>
          <DialogContentText sx={{ mb: 2, fontSize: 14 }}>
            Next you will see a setup code, to set a new cipher, and a recovery code, to recover an administrator. They
            are shown once.
          </DialogContentText>
          <TextField
            label={`Type ${FORCE_RESET_PHRASE} to confirm`}
            name="confirm"
            autoComplete="off"
            autoFocus
            fullWidth
            value={typed}
            onChange={(e) => setTyped(e.target.value)}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="contained" color="error" disabled={!confirmed}>
            Continue
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

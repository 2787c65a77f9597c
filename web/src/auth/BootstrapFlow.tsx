import { useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import Button from '@mui/material/Button';
import Divider from '@mui/material/Divider';
import Typography from '@mui/material/Typography';
import { bootstrap } from '../api/endpoints';
import type { BootstrapPhase, PendingMfa, PhaseResponse } from '../api/types';
import { errorCode } from '../components/errors';
import { AdminStep } from './AdminStep';
import { AegisSetupStep } from './AegisSetupStep';
import { AuthShell, type WizardSteps } from './AuthShell';
import { MfaCodeForm } from './MfaCodeForm';
import { MfaEnrollment } from './MfaEnrollment';
import { RestoreBackupStep } from './RestoreBackupStep';
import { SetupCodeStep } from './SetupCodeStep';
import { UnlockPage } from './UnlockPage';

export const BOOTSTRAP_QUERY = ['bootstrap-state'] as const;

export type WizardKind = 'setup' | 'recovery';

/** The steps of the wizard's restore path (disaster recovery). */
export const RESTORE_LABELS = ['Setup code', 'Restore backup', 'Restart and unlock', 'Sign in'];

export function wizardLabels(kind: WizardKind): string[] {
  return [
    'Setup code',
    'Master cipher',
    kind === 'recovery' ? 'Recover administrator' : 'Administrator',
    'Authenticator',
    'Sign in',
  ];
}

/** Everything before `login_required`, chosen by the Engine's phase. */
export function BootstrapFlow({
  phase,
  kind,
  initialSetupCode = null,
}: {
  phase: Exclude<BootstrapPhase, 'login_required'>;
  kind: WizardKind;
  /** The code a forced reset just showed, so the administrator need not type it. */
  initialSetupCode?: string | null;
}) {
  const queryClient = useQueryClient();
  const [pending, setPending] = useState<PendingMfa | null>(null);
  // The setup code is kept in memory only, for the cipher and
  // administrator steps; a reload asks for it again.
  const [setupCode, setSetupCode] = useState<string | null>(initialSetupCode);
  const [codeRefused, setCodeRefused] = useState(false);
  // The restore path instead of a new master cipher (phase aegis_setup_required).
  const [restoring, setRestoring] = useState(false);

  const setPhase = (r: PhaseResponse) => {
    setPending(null);
    queryClient.setQueryData(BOOTSTRAP_QUERY, { phase: r.phase });
  };
  // Another browser may have moved the deployment on; follow the Engine.
  const followPhase = (e: unknown) => {
    const code = errorCode(e);
    if (code === 'wrong_phase' || code === 'bootstrap_finished') {
      void queryClient.invalidateQueries({ queryKey: BOOTSTRAP_QUERY });
    }
    if (code === 'setup_code_required') {
      setSetupCode(null);
      setCodeRefused(true);
    }
  };
  const steps = (active: number): WizardSteps => ({ labels: wizardLabels(kind), active });

  const needsCode = phase === 'aegis_setup_required' || (phase === 'admin_setup_required' && !pending);
  if (needsCode && setupCode === null) {
    return (
      <AuthShell
        steps={steps(0)}
        title="Enter the setup code"
        subtitle="Welcome to Cairn. To prove this deployment is yours, enter the setup code the server printed."
      >
        <SetupCodeStep
          refused={codeRefused}
          onCode={(code) => {
            setSetupCode(code);
            setCodeRefused(false);
          }}
        />
      </AuthShell>
    );
  }

  switch (phase) {
    case 'aegis_unlock_required':
      return <UnlockPage onUnlocked={setPhase} />;
    case 'aegis_setup_required':
      if (restoring) {
        return (
          <AuthShell
            steps={{ labels: RESTORE_LABELS, active: 1 }}
            title="Restore from a backup"
            subtitle="Load the encrypted file another Engine exported; analyze it first, then restore it."
            width={640}
          >
            <RestoreBackupStep
              setupCode={setupCode ?? ''}
              // SPEC backup rule 5: the phase the poll settled on.
              onSettled={(p) => queryClient.setQueryData(BOOTSTRAP_QUERY, { phase: p })}
              onBack={() => setRestoring(false)}
              onError={followPhase}
            />
          </AuthShell>
        );
      }
      return (
        <AuthShell
          steps={steps(1)}
          title="Set the master cipher"
          subtitle="Choose the passphrase that protects every secret this deployment stores."
        >
          <AegisSetupStep setupCode={setupCode ?? ''} onDone={setPhase} onError={followPhase} />
          <Divider sx={{ my: 2 }}>or</Divider>
          <Button variant="outlined" fullWidth onClick={() => setRestoring(true)}>
            Restore from a backup…
          </Button>
        </AuthShell>
      );
    case 'admin_setup_required':
    case 'admin_recovery_required': {
      const mode = phase === 'admin_setup_required' ? 'setup' : 'recover';
      if (pending) {
        return (
          <AuthShell
            steps={steps(3)}
            title="Set up the authenticator"
            subtitle={
              <>
                Sign-in needs a code from an authenticator app. Add <b>Cairn</b> to your app, then enter the code it
                shows to finish {mode === 'setup' ? 'creating the administrator' : 'the recovery'}.
              </>
            }
          >
            <MfaEnrollment setup={pending.mfa} />
            <MfaCodeForm
              verify={(code) => bootstrap.adminMfaVerify(pending.pending_token, code)}
              onVerified={setPhase}
              onRestart={() => setPending(null)}
              submitLabel="Verify and finish"
            />
          </AuthShell>
        );
      }
      return (
        <AuthShell
          steps={steps(2)}
          title={mode === 'setup' ? 'Create the administrator' : 'Recover an administrator'}
          subtitle={
            mode === 'setup'
              ? 'This account manages the deployment: sites, operators, devices and the master cipher.'
              : 'The master cipher was reset, so every account must be recovered. Give an administrator a new password with the one-time recovery code.'
          }
        >
          <AdminStep key={mode} mode={mode} setupCode={setupCode ?? ''} onPending={setPending} onError={followPhase} />
          {mode === 'setup' && (
            <Typography variant="caption" color="text.secondary" component="p" sx={{ mt: 2 }}>
              Next you will add an authenticator app for this account.
            </Typography>
          )}
        </AuthShell>
      );
    }
  }
}

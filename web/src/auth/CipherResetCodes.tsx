import { useState } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import FormControlLabel from '@mui/material/FormControlLabel';
import Typography from '@mui/material/Typography';
import type { ForceResetResult } from '../api/types';
import { AuthShell } from './AuthShell';

function Code({ label, value, testId }: { label: string; value: string; testId: string }) {
  return (
    <Box sx={{ mb: 2 }}>
      <Typography variant="body2" color="text.secondary">
        {label}
      </Typography>
      <Box
        component="code"
        data-testid={testId}
        sx={{
          display: 'block',
          p: 1.25,
          mt: 0.5,
          borderRadius: 1,
          bgcolor: 'action.hover',
          fontSize: 16,
          letterSpacing: 0.5,
          wordBreak: 'break-all',
          userSelect: 'all',
        }}
      >
        {value}
      </Box>
    </Box>
  );
}

/**
 * Shown once, right after an administrator forced a reset of the master
 * cipher: the Engine ended every session and keeps only hashes of these
 * codes, so this screen is the only place they appear (short of reading
 * the server's terminal or running `cairn admin recovery-code`).
 */
export function CipherResetCodes({ result, onContinue }: { result: ForceResetResult; onContinue: () => void }) {
  const [saved, setSaved] = useState(false);
  return (
    <AuthShell title="The master cipher was reset" subtitle="Write both codes down now: they are shown only once.">
      <Alert severity="warning" sx={{ mb: 2 }}>
        Every session ended and every local account awaits recovery. Next, set a new master cipher with the setup code,
        then recover an administrator with the recovery code (a new password and authenticator), then sign in.
      </Alert>
      <Code label="Setup code (sets the new master cipher)" value={result.setup_code} testId="reset-setup-code" />
      <Code label="Recovery code (recovers an administrator)" value={result.recovery_code} testId="reset-recovery-code" />
      <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
        Lost them? Each Engine process also writes a setup code to its log and to <code>setup-code</code> in its data
        directory, and <code>cairn admin recovery-code</code>, run on the server, prints a new recovery code.
      </Typography>
      <FormControlLabel
        control={<Checkbox checked={saved} onChange={(e) => setSaved(e.target.checked)} />}
        label="I have saved both codes"
      />
      <Button variant="contained" fullWidth disabled={!saved} onClick={onContinue} sx={{ mt: 1 }}>
        Continue to set up the new cipher
      </Button>
    </AuthShell>
  );
}

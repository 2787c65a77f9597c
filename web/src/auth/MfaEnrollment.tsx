import { useEffect, useState } from 'react';
import QRCode from 'qrcode';
import Box from '@mui/material/Box';
import IconButton from '@mui/material/IconButton';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import type { MfaSetup } from '../api/types';

/** Renders an otpauth:// URL as an SVG data URL (no canvas needed). */
export async function qrDataUrl(otpauthUrl: string): Promise<string> {
  const svg = await QRCode.toString(otpauthUrl, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/** The QR code and the base32 secret of a new authenticator (wizard and sign-in share it). */
export function MfaEnrollment({ setup }: { setup: MfaSetup }) {
  const [src, setSrc] = useState<string | null>(null);
  const [qrFailed, setQrFailed] = useState(false);
  const [copied, setCopied] = useState(false);

  useEffect(() => {
    let live = true;
    setSrc(null);
    setQrFailed(false);
    qrDataUrl(setup.otpauth_url).then(
      (url) => live && setSrc(url),
      () => live && setQrFailed(true),
    );
    return () => {
      live = false;
    };
  }, [setup.otpauth_url]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(setup.secret);
      setCopied(true);
      window.setTimeout(() => setCopied(false), 1500);
    } catch {
      // Clipboard needs a secure context; the secret stays selectable.
    }
  };

  return (
    <Box data-testid="mfa-enrollment" sx={{ mb: 2 }}>
      <Typography variant="body2" sx={{ mb: 1.5 }}>
        Scan this code with an authenticator app (for example Aegis, FreeOTP, Google Authenticator or 1Password), or
        type the key below into it.
      </Typography>
      <Box sx={{ display: 'flex', justifyContent: 'center', mb: 1.5 }}>
        <Box
          sx={{
            width: 196,
            height: 196,
            border: 1,
            borderColor: 'divider',
            borderRadius: 1,
            display: 'flex',
            alignItems: 'center',
            justifyContent: 'center',
            bgcolor: '#fff',
          }}
        >
          {src ? (
            <img src={src} width={184} height={184} alt="QR code to add Cairn to an authenticator app" data-testid="totp-qr" />
          ) : (
            <Typography variant="caption" color="text.secondary">
              {qrFailed ? 'The QR code could not be drawn; use the key below.' : 'Drawing QR code…'}
            </Typography>
          )}
        </Box>
      </Box>
      <Typography variant="caption" color="text.secondary" component="div">
        Setup key (base32)
      </Typography>
      <Box
        sx={{
          display: 'flex',
          alignItems: 'center',
          gap: 1,
          border: 1,
          borderColor: 'divider',
          borderRadius: 1,
          bgcolor: 'grey.50',
          px: 1.25,
          py: 0.5,
        }}
      >
        <Typography
          data-testid="totp-secret"
          component="code"
          sx={{ fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 14, flex: 1, wordBreak: 'break-all', userSelect: 'all' }}
        >
          {setup.secret}
        </Typography>
        <Tooltip title={copied ? 'Copied' : 'Copy key'}>
          <IconButton size="small" aria-label="Copy setup key" onClick={copy}>
            <ContentCopyIcon fontSize="small" />
          </IconButton>
        </Tooltip>
      </Box>
    </Box>
  );
}

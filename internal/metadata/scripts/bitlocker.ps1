# Cairn bundled script: collects BitLocker Drive Encryption status into
# metadata field 2 ("Bitlocker Drive Encryption") through the agent's
# command line: one entry per volume, e.g. "C: On (FullyEncrypted, 100%)".
# Uses Get-BitLockerVolume, or manage-bde where the module is missing.
$ErrorActionPreference = 'Stop'
$agent = $env:CAIRN_AGENT_BIN
if (-not $agent) {
    Write-Error 'CAIRN_AGENT_BIN is not set: run this script through the Cairn agent.'
    exit 2
}
$config = @()
if ($env:CAIRN_AGENT_CONFIG) { $config = @('--config', $env:CAIRN_AGENT_CONFIG) }

try {
    $parts = @()
    if (Get-Command -Name Get-BitLockerVolume -ErrorAction SilentlyContinue) {
        foreach ($v in (Get-BitLockerVolume | Sort-Object -Property MountPoint)) {
            $parts += ('{0} {1} ({2}, {3}%)' -f $v.MountPoint, $v.ProtectionStatus, $v.VolumeStatus, $v.EncryptionPercentage)
        }
    } elseif (Get-Command -Name manage-bde.exe -ErrorAction SilentlyContinue) {
        $volume = $null
        foreach ($line in (& manage-bde.exe -status)) {
            if ($line -match '^Volume ([A-Za-z]:)') {
                $volume = $Matches[1]
            } elseif ($volume -and $line -match '^\s*Protection Status:\s*(.+)$') {
                $parts += ('{0} {1}' -f $volume, $Matches[1].Trim())
                $volume = $null
            }
        }
    }
    if ($parts.Count -gt 0) { $value = $parts -join '; ' } else { $value = 'BitLocker not available on this device' }
} catch {
    $value = 'BitLocker status unavailable: ' + $_.Exception.Message
}

# One line, no double quotes (Windows PowerShell 5.1 passes them to native
# commands unescaped), at most 1024 characters.
$value = ($value -replace '[\r\n\t]+', ' ') -replace '"', "'"
if ($value.Length -gt 1024) { $value = $value.Substring(0, 1021) + '...' }
Write-Output "Bitlocker Drive Encryption: $value"
& $agent @config --metadata set 2 $value
exit $LASTEXITCODE

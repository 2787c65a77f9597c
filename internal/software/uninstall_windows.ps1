# Cairn software uninstall (Windows): finds the Programs and Features entry
# named CAIRN_PARAM_NAME (and CAIRN_PARAM_VERSION when set) and runs its
# uninstaller quietly: msiexec /x by product code for Windows Installer
# products, else the entry's QuietUninstallString, else its
# UninstallString with the vendor's quiet flags where the uninstaller is
# recognised (Inno Setup, NSIS).
$ErrorActionPreference = 'Stop'
$name = $env:CAIRN_PARAM_NAME
$version = $env:CAIRN_PARAM_VERSION
$roots = @(
  'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall',
  'HKLM:\SOFTWARE\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall'
)
$entry = Get-ChildItem -Path $roots -ErrorAction SilentlyContinue |
  ForEach-Object { Get-ItemProperty -LiteralPath $_.PSPath } |
  Where-Object { $_.DisplayName -eq $name -and (-not $version -or $_.DisplayVersion -eq $version) } |
  Select-Object -First 1
if (-not $entry) {
  [Console]::Error.WriteLine("cairn: no uninstall entry named $name")
  exit 3
}
function Finish([int]$code) {
  # 3010 and 1641: uninstalled; a restart completes it.
  if ($code -eq 3010 -or $code -eq 1641) {
    Write-Output "cairn: uninstalled; restart the device to complete it (exit code $code)"
    exit 0
  }
  exit $code
}
$productCode = $entry.PSChildName
if ($entry.WindowsInstaller -eq 1 -and $productCode -match '^\{[0-9A-Fa-f-]{36}\}$') {
  Write-Output "cairn: msiexec /x $productCode /qn /norestart"
  $p = Start-Process -FilePath msiexec.exe -ArgumentList @('/x', $productCode, '/qn', '/norestart') -Wait -PassThru
  Finish $p.ExitCode
}
$cmd = $entry.QuietUninstallString
if (-not $cmd) {
  $cmd = $entry.UninstallString
  if (-not $cmd) {
    [Console]::Error.WriteLine("cairn: $name has no uninstall command")
    exit 3
  }
  if ($cmd -match '(?i)unins\d{3}\.exe') {
    $cmd += ' /VERYSILENT /SUPPRESSMSGBOXES /NORESTART'
  } elseif ($cmd -match '(?i)uninst(all)?\.exe') {
    $cmd += ' /S'
  }
}
Write-Output "cairn: $cmd"
$p = Start-Process -FilePath cmd.exe -ArgumentList @('/d', '/s', '/c', "`"$cmd`"") -Wait -PassThru
Finish $p.ExitCode

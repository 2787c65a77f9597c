package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// engineArtifactKey is the artifact key an Engine process uses
// (docs/agent.md "Signing chain"): only the public half when
// CAIRN_ARTIFACT_PUBLIC_KEY is set (the private key is kept offline),
// else the key file CAIRN_ARTIFACT_KEY_FILE, by default
// <data dir>/artifact-signing.key, made on first start when create is
// set (serve; a site worker never makes one of its own).
func engineArtifactKey(dataDir string, create bool) (*agentartifacts.ArtifactKey, error) {
	if pub := os.Getenv(agentartifacts.EnvArtifactPublicKey); pub != "" {
		return agentartifacts.OfflineKey(pub)
	}
	path := os.Getenv(agentartifacts.EnvArtifactKeyFile)
	if path == "" {
		path = filepath.Join(dataDir, "artifact-signing.key")
	}
	if create {
		return agentartifacts.LoadOrCreateKeyFile(path)
	}
	k, err := agentartifacts.LoadKeyFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return k, err
}

const signArtifactUsage = `usage:
  cairn sign-artifact --generate-key --key FILE
  cairn sign-artifact --key FILE --platform PLATFORM --artifact PATH [--build-seq N] [--rollback]

The first form makes an artifact key (FILE, mode 0600) and prints its
public key: give that to the Engine as CAIRN_ARTIFACT_PUBLIC_KEY and keep
FILE on this machine. The second signs an agent binary the way the Engine
serves it (its SHA-256, size and the build ID of its .build-id sidecar,
and the build sequence of --build-seq or its .build-seq sidecar) and
writes PATH.sig: copy it next to the binary in the Engine's artifact
directory. --rollback signs an explicit downgrade, which agents on a
later build accept.`

// signArtifact is `cairn sign-artifact`: it needs no database, no Engine
// and no network, so it runs on an offline machine.
func signArtifact(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sign-artifact", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keyFile := fs.String("key", "", "")
	generate := fs.Bool("generate-key", false, "")
	platform := fs.String("platform", "", "")
	artifact := fs.String("artifact", "", "")
	seq := fs.Int64("build-seq", -1, "")
	rollback := fs.Bool("rollback", false, "")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, signArtifactUsage)
	}
	if *keyFile == "" {
		return errors.New(signArtifactUsage)
	}
	if *generate {
		k, err := agentartifacts.GenerateKeyFile(*keyFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s=%s\n", agentartifacts.EnvArtifactPublicKey, k.PublicBase64())
		return nil
	}
	if *platform == "" || *artifact == "" {
		return errors.New(signArtifactUsage)
	}
	k, err := agentartifacts.LoadKeyFile(*keyFile)
	if err != nil {
		return err
	}
	a, err := agentartifacts.Describe(*platform, *artifact)
	if err != nil {
		return err
	}
	art := agentartifacts.UpdateArtifactOf(a)
	if *seq >= 0 {
		art.BuildSeq = *seq
	}
	art.Rollback = *rollback
	sg, err := k.Sign(art)
	if err != nil {
		return err
	}
	raw, err := json.MarshalIndent(sg, "", "  ")
	if err != nil {
		return err
	}
	out := *artifact + agentartifacts.SignatureSuffix
	if err := os.WriteFile(out, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signed %s (artifact %s, build %s, sequence %d, rollback %t): %s\n", *artifact, a.ID, a.BuildID,
		art.BuildSeq, art.Rollback, out)
	return nil
}

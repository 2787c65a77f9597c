package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
)

// memberFileName is where `cairn cluster join` keeps the handoff under
// the data directory (docs/architecture.md "Cluster model").
const memberFileName = "cluster-member.json"

// engineClient is an HTTP client for the Engine at base, trusting caFile's
// certificates as well as the system's when caFile is set.
func engineClient(caFile string) (*http.Client, error) {
	c := &http.Client{Timeout: 0}
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return c, nil
}

// runCluster is `cairn cluster join`: ask the Engine to admit this
// process, wait for an administrator's decision, and keep the sealed
// handoff it is sent (an Internal key and the Engine's URL) in the member
// file, readable by this user only.
func runCluster(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "join" {
		return errors.New("usage: cairn cluster join --engine-url URL --code CODE --role worker|engine [--site SLUG...]")
	}
	fs := flag.NewFlagSet("cluster join", flag.ExitOnError)
	engineURL := fs.String("engine-url", env("CAIRN_ENGINE_URL", ""), "the Engine's URL")
	code := fs.String("code", env("CAIRN_JOIN_CODE", ""), "the join code an administrator issued")
	role := fs.String("role", cluster.RoleWorker, "what this process is: worker (a standalone `cairn worker`) or engine (a serve replica)")
	var sites stringList
	fs.Var(&sites, "site", "site slug a worker runs (repeatable)")
	host, _ := os.Hostname()
	name := fs.String("name", host, "the name administrators see")
	caFile := fs.String("ca-file", env("CAIRN_ENGINE_CA_FILE", ""), "PEM certificate(s) to trust for the Engine's HTTPS (its local CA)")
	dataDir := fs.String("data-dir", env("CAIRN_DATA_DIR", ".data"), "directory the member file is written to")
	out := fs.String("member-file", env("CAIRN_CLUSTER_MEMBER_FILE", ""), "where the handoff is kept (default <data-dir>/"+memberFileName+")")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *engineURL == "" || *code == "" {
		return errors.New("set --engine-url and --code")
	}
	if *out == "" {
		*out = filepath.Join(*dataDir, memberFileName)
	}
	client, err := engineClient(*caFile)
	if err != nil {
		return err
	}
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	base := strings.TrimRight(*engineURL, "/")
	req := cluster.JoinRequest{Code: *code, Role: *role, Name: *name, Sites: sites, Version: serveradmin.BuildInfo().Version,
		PublicKey: base64.StdEncoding.EncodeToString(pub[:])}
	var joined cluster.Joined
	if err := postJSON(ctx, client, base+"/api/bootstrap/cluster/join", req, &joined); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "admission %s requested; key fingerprint %s\n", joined.AdmissionID, joined.Fingerprint)
	fmt.Fprintln(stdout, "an administrator approves it on the Server page's Cluster tab (or `cairn command cluster.approve`) after comparing the fingerprint")

	r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/bootstrap/cluster/join/"+joined.AdmissionID+"/events", nil)
	if err != nil {
		return err
	}
	r.Header.Set(cluster.TokenHeader, joined.Token)
	res, err := client.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return apiError(res)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch typ {
			case "event":
				var e cluster.Event
				if json.Unmarshal(data, &e) == nil {
					fmt.Fprintln(stdout, e.At.Format(time.RFC3339), e.Message)
				}
			case "handoff":
				var h struct {
					Box string `json:"box"`
				}
				if err := json.Unmarshal(data, &h); err != nil {
					return err
				}
				sealed, err := base64.StdEncoding.DecodeString(h.Box)
				if err != nil {
					return err
				}
				handoff, err := cluster.OpenHandoff(sealed, pub, priv)
				if err != nil {
					return err
				}
				if err := writeMemberFile(*out, handoff); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "approved: member file %s written (Internal key %s)\n", *out, handoff.InternalKeyID)
				return nil
			case "end":
				var e struct {
					State string `json:"state"`
				}
				_ = json.Unmarshal(data, &e)
				return fmt.Errorf("the admission ended %s", e.State)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("the Engine closed the join stream before a decision")
}

func writeMemberFile(path string, h cluster.Handoff) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readMemberFile(path string) (cluster.Handoff, []byte, error) {
	var h cluster.Handoff
	data, err := os.ReadFile(path)
	if err != nil {
		return h, nil, err
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return h, nil, fmt.Errorf("%s: %w", path, err)
	}
	secret, err := base64.StdEncoding.DecodeString(h.InternalKeySecret)
	if err != nil || h.InternalKeyID == "" || h.EngineURL == "" {
		return h, nil, fmt.Errorf("%s is not a cluster member file", path)
	}
	return h, secret, nil
}

func postJSON(ctx context.Context, c *http.Client, url string, in, out any) error {
	body, _ := json.Marshal(in)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return apiError(res)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// apiError is an Engine's error answer as an error: its code and message
// (never a secret: the Engine's errors carry none).
func apiError(res *http.Response) error {
	var e struct {
		Error struct {
			Code    string            `json:"code"`
			Message string            `json:"message"`
			Fields  map[string]string `json:"fields"`
		} `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
		if len(e.Error.Fields) > 0 {
			return fmt.Errorf("%s: %s %v", e.Error.Code, e.Error.Message, e.Error.Fields)
		}
		return fmt.Errorf("%s: %s", e.Error.Code, e.Error.Message)
	}
	return fmt.Errorf("the Engine answered %s", res.Status)
}

// internalCaller signs Internal requests to the Engine.
type internalCaller struct {
	client *http.Client
	base   string
	keyID  string
	secret []byte
}

// internalCallerFrom reads the member file (`cairn cluster join`) or, when
// CAIRN_INTERNAL_KEY_ID is set, the key in CAIRN_INTERNAL_KEY_FILE (base64,
// as POST /api/server/internal-keys answered it) with CAIRN_ENGINE_URL.
func internalCallerFrom(memberFile, caFile string) (*internalCaller, error) {
	client, err := engineClient(caFile)
	if err != nil {
		return nil, err
	}
	if id := os.Getenv("CAIRN_INTERNAL_KEY_ID"); id != "" {
		raw, err := os.ReadFile(os.Getenv("CAIRN_INTERNAL_KEY_FILE"))
		if err != nil {
			return nil, fmt.Errorf("CAIRN_INTERNAL_KEY_FILE: %w", err)
		}
		secret, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			return nil, errors.New("CAIRN_INTERNAL_KEY_FILE does not hold a base64 key")
		}
		base := os.Getenv("CAIRN_ENGINE_URL")
		if base == "" {
			return nil, errors.New("set CAIRN_ENGINE_URL with CAIRN_INTERNAL_KEY_ID")
		}
		return &internalCaller{client: client, base: strings.TrimRight(base, "/"), keyID: id, secret: secret}, nil
	}
	h, secret, err := readMemberFile(memberFile)
	if err != nil {
		return nil, err
	}
	base := env("CAIRN_ENGINE_URL", h.EngineURL)
	return &internalCaller{client: client, base: strings.TrimRight(base, "/"), keyID: h.InternalKeyID, secret: secret}, nil
}

// do sends a signed request and decodes the answer into out.
func (c *internalCaller) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	r, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if in != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	internalauth.Sign(r, body, c.keyID, c.secret, time.Now())
	res, err := c.client.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return apiError(res)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// runCommand is `cairn command`: one operator bridge command sent to
// POST /v1/command under an Internal key, its answer printed as JSON.
func runCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("command", flag.ExitOnError)
	dataDir := fs.String("data-dir", env("CAIRN_DATA_DIR", ".data"), "directory of the member file")
	memberFile := fs.String("member-file", env("CAIRN_CLUSTER_MEMBER_FILE", ""), "the member file (default <data-dir>/"+memberFileName+")")
	caFile := fs.String("ca-file", env("CAIRN_ENGINE_CA_FILE", ""), "PEM certificate(s) to trust for the Engine's HTTPS")
	role := fs.String("role", "", "cluster.join-code: the joiner's role (worker or engine)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cairn command [flags] cluster.status | cluster.join-code --role R | cluster.approve ID | cluster.cancel ID")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("name a command")
	}
	// Flags may follow the command's name.
	if err := fs.Parse(rest[1:]); err != nil {
		return err
	}
	req := map[string]string{"command": rest[0]}
	if *role != "" {
		req["role"] = *role
	}
	if a := fs.Args(); len(a) > 0 {
		req["admission_id"] = a[0]
	}
	if *memberFile == "" {
		*memberFile = filepath.Join(*dataDir, memberFileName)
	}
	c, err := internalCallerFrom(*memberFile, *caFile)
	if err != nil {
		return err
	}
	var out json.RawMessage
	if err := c.do(ctx, http.MethodPost, "/v1/command", req, &out); err != nil {
		return err
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, out, "", "  ")
	_, err = fmt.Fprintln(stdout, pretty.String())
	return err
}

// publicBaseURL asks the Engine for its public URL over the Internal
// class (a worker started without CAIRN_PUBLIC_URL).
func (c *internalCaller) publicBaseURL(ctx context.Context) (string, error) {
	var out struct {
		PublicBaseURL string `json:"public_base_url"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/internal/job-scheduler/public-base-url", nil, &out); err != nil {
		return "", err
	}
	if out.PublicBaseURL == "" {
		return "", errors.New("the Engine answered no public URL")
	}
	return out.PublicBaseURL, nil
}

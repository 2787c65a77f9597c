package workers

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Payload encryption (issue 21 item 1; docs/architecture.md "Trust
// boundaries"). Every payload the Engine's Temporal client writes (workflow
// and activity inputs and results, signals, queries, memos, heartbeat
// details, and failure messages through the failure converter) is sealed
// with AES-256-GCM under a payload key; the key's ID travels in the
// payload's metadata so rotation keeps older histories readable.
const (
	// EncodingEncrypted is the metadata "encoding" of a sealed payload.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the payload key that sealed a payload.
	MetadataKeyID = "encryption-key-id"
	// codecLookup bounds a key look-up (a database read on a cache miss):
	// the SDK's codec interface carries no context.
	codecLookup = 10 * time.Second
)

// PayloadKeys are the codec's keys (payloadkeys.Keys).
type PayloadKeys interface {
	// Current is the key that seals new payloads.
	Current(ctx context.Context) (id string, key []byte, err error)
	// Get is the key with id.
	Get(ctx context.Context, id string) ([]byte, error)
}

// PayloadCodec seals and opens payloads with the deployment's payload keys.
type PayloadCodec struct {
	keys PayloadKeys

	mu    sync.Mutex
	aeads map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*PayloadCodec)(nil)

// NewPayloadCodec returns the codec over keys.
func NewPayloadCodec(keys PayloadKeys) *PayloadCodec {
	return &PayloadCodec{keys: keys, aeads: map[string]cipher.AEAD{}}
}

// DataConverter is the SDK's default converter with every payload sealed by
// codec.
func DataConverter(codec converter.PayloadCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
}

// FailureConverter moves failure messages and stack traces into a payload
// sealed by dc: an error's text can quote what an agent answered. A
// process that cannot seal (its master cipher is locked) reports the
// failure with its type but a fixed message, never the original text in
// the clear: the task is retried once a process holds the cipher.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return sealedFailures{inner: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc}), dc: dc}
}

// unsealedFailure replaces a failure's message where it could not be sealed.
const unsealedFailure = "the failure's message could not be sealed: this Engine process does not hold the master cipher"

type sealedFailures struct {
	inner converter.FailureConverter
	dc    converter.DataConverter
}

func (s sealedFailures) ErrorToFailure(err error) *failurepb.Failure {
	f := s.inner.ErrorToFailure(err)
	for c := f; c != nil; c = c.GetCause() {
		if c.GetEncodedAttributes() != nil {
			continue // sealed already (a failure passed on as it came)
		}
		if converter.EncodeCommonFailureAttributes(s.dc, c) != nil {
			c.Message, c.StackTrace, c.EncodedAttributes = unsealedFailure, "", nil
		}
	}
	return f
}

func (s sealedFailures) FailureToError(f *failurepb.Failure) error { return s.inner.FailureToError(f) }

func payloadAAD(id string) []byte { return []byte("cairn:temporal-payload:" + id) }

func (c *PayloadCodec) aead(id string, key []byte) (cipher.AEAD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.aeads[id]; ok {
		return a, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	c.aeads[id] = a
	return a, nil
}

// Encode seals each payload under the current key.
func (c *PayloadCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if len(payloads) == 0 {
		return payloads, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), codecLookup)
	defer cancel()
	id, key, err := c.keys.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("seal Temporal payload: %w", err)
	}
	a, err := c.aead(id, key)
	if err != nil {
		return nil, err
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(EncodingEncrypted), MetadataKeyID: []byte(id)},
			Data:     a.Seal(nonce, nonce, plain, payloadAAD(id)),
		}
	}
	return out, nil
}

// Decode opens sealed payloads; others (histories from before encryption)
// pass unchanged.
func (c *PayloadCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	ctx, cancel := context.WithTimeout(context.Background(), codecLookup)
	defer cancel()
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		key, err := c.keys.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("open Temporal payload: %w", err)
		}
		a, err := c.aead(id, key)
		if err != nil {
			return nil, err
		}
		if len(p.Data) < a.NonceSize() {
			return nil, errors.New("open Temporal payload: too short")
		}
		plain, err := a.Open(nil, p.Data[:a.NonceSize()], p.Data[a.NonceSize():], payloadAAD(id))
		if err != nil {
			return nil, fmt.Errorf("open Temporal payload sealed by key %s: %w", id, err)
		}
		var decoded commonpb.Payload
		if err := proto.Unmarshal(plain, &decoded); err != nil {
			return nil, err
		}
		out[i] = &decoded
	}
	return out, nil
}

package aimux

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The typed surface: the generated types' JSON rules (absent / null / value, unknown members
// and variants kept, open enums) and the typed ops against the local OpenAI-compatible server.

func typedModel(f *fakeOpenAI, mode string) ModelSpec {
	return ModelSpec{Provider: ProviderOpenAI, ModelID: "gpt-4o-mini", BaseURL: String(f.URL + "/" + mode + "/v1"), APIKey: String("sk-test")}
}

func TestOptTellsAbsentFromNull(t *testing.T) {
	p := GenerateTextParams{Model: ModelSpec{Provider: "openai", ModelID: "m"}, Temperature: Null[float64](), TopK: Int(3)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"model":{"provider":"openai","modelId":"m"},"temperature":null,"topK":3}`; string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	var back GenerateTextParams
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Temperature.IsNull() || back.Temperature.IsSet() || back.TopP.IsNull() || !back.TopP.IsZero() {
		t.Fatalf("temperature null %v, topP absent %v", back.Temperature.IsNull(), back.TopP.IsZero())
	}
	if k, ok := back.TopK.Get(); !ok || k != 3 || back.MaxRetries.Or(2) != 2 {
		t.Fatalf("topK %v %v", k, ok)
	}
}

func TestUnknownMembersAreKeptAndSentAgain(t *testing.T) {
	in := `{"text":"hi","finishReason":"a-new-reason","usage":{"inputTokens":1,"futureTokens":7},"toolCalls":[],"response":{},"fromANewerCore":{"x":[1,2]}}`
	var r GenerateTextResult
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.FinishReason != "a-new-reason" || r.FinishReason == FinishReasonStop {
		t.Fatalf("an enum value this version does not know: %q", r.FinishReason)
	}
	if string(r.ExtraFields["fromANewerCore"]) != `{"x":[1,2]}` || string(r.Usage.ExtraFields["futureTokens"]) != "7" {
		t.Fatalf("extra fields: %v / %v", r.ExtraFields, r.Usage.ExtraFields)
	}
	if string(r.RawJSON()) != in || !strings.Contains(string(r.Usage.RawJSON()), "futureTokens") {
		t.Fatalf("raw JSON: %s", r.RawJSON())
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, []byte(in), out) {
		t.Fatalf("not sent again as decoded:\n  in  %s\n  out %s", in, out)
	}
	p := ModelSpec{Provider: "openai", ModelID: "m", ExtraFields: map[string]json.RawMessage{"modelId": json.RawMessage(`"shadow"`), "region": json.RawMessage(`"eu"`)}}
	if b, _ := json.Marshal(p); string(b) != `{"provider":"openai","modelId":"m","region":"eu"}` {
		t.Fatalf("an extra member never replaces a field: %s", b)
	}
	p.ExtraFields["bad"] = json.RawMessage("{")
	if _, err := json.Marshal(p); err == nil {
		t.Fatal("an extra member that is not JSON must not be sent")
	}
}

func TestUnionsByDiscriminatorAndKind(t *testing.T) {
	m := PartsMessage(MessageRoleUser, ContentPart{OfTextContent: &TextContent{Text: "look"}},
		ContentPart{OfFileContent: &FileContent{MediaType: "image/png", Data: "iVBORw0KGgo="}})
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":[{"type":"text","text":"look"},{"type":"file","mediaType":"image/png","data":"iVBORw0KGgo="}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"hologram","depth":3}]}`), &back); err != nil {
		t.Fatal(err)
	}
	parts := back.Content.Value().OfContentPartArray
	if len(parts) != 2 || parts[0].OfTextContent == nil || parts[0].OfTextContent.Text != "a" {
		t.Fatalf("parts: %+v", parts)
	}
	if parts[1].AsAny() != nil || string(parts[1].RawJSON()) != `{"type":"hologram","depth":3}` {
		t.Fatalf("a variant this version does not know is kept: %v %s", parts[1].AsAny(), parts[1].RawJSON())
	}
	if again, _ := json.Marshal(back); !strings.Contains(string(again), `{"type":"hologram","depth":3}`) {
		t.Fatalf("and sent again: %s", again)
	}
	if b, _ := json.Marshal(UserMessage("hi")); string(b) != `{"role":"user","content":"hi"}` {
		t.Fatalf("text content: %s", b)
	}
	var ev StreamTextEvent
	if err := json.Unmarshal([]byte(`{"type":"text-delta","text":"He"}`), &ev); err != nil {
		t.Fatal(err)
	}
	if d, ok := ev.AsAny().(*TextDeltaEvent); !ok || d.Text != "He" {
		t.Fatalf("event: %#v", ev.AsAny())
	}
}

func TestTypedGenerateTextOverHTTP(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	res, err := GenerateText(context.Background(), GenerateTextParams{
		Model:      typedModel(f, "ok"),
		Messages:   []Message{SystemMessage("be brief"), UserMessage("hi")},
		MaxRetries: Int(0),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	if res.Text != "Hi from Go" || res.FinishReason != FinishReasonStop || res.Usage.TotalTokens.Value() != 6 {
		t.Fatalf("result %s", res.RawJSON())
	}
	if id, ok := res.Response.ModelID.Get(); !ok || id != "gpt-4o-mini" {
		t.Fatalf("response.modelId %q %v", id, ok)
	}
}

func TestTypedErrorsNameThemselvesAndCarryTheStatus(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	_, err := GenerateText(context.Background(), GenerateTextParams{
		Model: typedModel(f, "ratelimit"), Prompt: String("hi"), MaxRetries: Int(1),
	})
	var root *Error
	if !errors.As(err, &root) || root.Code != CodeRetry {
		t.Fatalf("want an AI_RetryError, got %T %v", err, err)
	}
	if !strings.HasPrefix(err.Error(), "AI_RetryError: Failed after 2 attempts") {
		t.Fatalf("Error() = %q", err.Error())
	}
	if root.StatusCode() != 429 {
		t.Fatalf("the caught retry error's StatusCode() = %d: %s", root.StatusCode(), root.Raw)
	}
	var apiErr *APICallError
	if !errors.As(err, &apiErr) || apiErr.Node().StatusCode() != 429 || !strings.HasPrefix(apiErr.Node().Error(), "AI_APICallError: ") {
		t.Fatalf("last attempt: %v", apiErr)
	}
	if !root.Retryable || root.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("retryable %v after %v", root.Retryable, root.RetryAfter)
	}

	_, err = GenerateText(context.Background(), GenerateTextParams{
		Model:      ModelSpec{Provider: "openai", ModelID: "gpt-4o-mini", BaseURL: String("http://127.0.0.1:1/v1"), APIKey: String("sk-test")},
		Prompt:     String("hi"),
		MaxRetries: Int(1),
		Retry:      Some(RetrySpec{InitialDelayMs: Float(1)}),
	})
	if !errors.As(err, &root) || root.StatusCode() != 0 {
		t.Fatalf("a refused connection has no status: %v", err)
	}
	var src *SourceError
	if !errors.As(err, &src) || !strings.HasPrefix(src.Error(), src.Type+": ") {
		t.Fatalf("source errors name their class: %v", src)
	}
	last := error(root)
	for next := errors.Unwrap(last); next != nil; next = errors.Unwrap(next) {
		last = next
	}
	if !strings.HasPrefix(last.Error(), "ConnectionRefusedError: ") {
		t.Fatalf("the chain ends at %q", last.Error())
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		t.Fatal("errors.Is(err, syscall.ECONNREFUSED) must match the refused connection, and only it")
	}
}

func TestTypedStreamEndsWithTheDecodedError(t *testing.T) {
	f := newFakeOpenAI(t, 0)
	s, err := StreamText(context.Background(), StreamTextParams{Model: typedModel(f, "stream-error"), Prompt: String("hi"), MaxRetries: Int(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text string
	for s.Next() {
		if d, ok := s.Current().AsAny().(*TextDeltaEvent); ok {
			text += d.Text
		}
	}
	var apiErr *APICallError
	if text != "Hel" || !errors.As(s.Err(), &apiErr) || apiErr.Node().StatusCode() != 503 {
		t.Fatalf("text %q, err %v", text, s.Err())
	}
}

func TestGenerateObjectRefusesHostTools(t *testing.T) {
	_, err := GenerateObject(context.Background(), GenerateObjectParams{}, WithTools(Tools{"x": nil}))
	if !errors.Is(err, ErrUnsupportedFunctionality) {
		t.Fatalf("got %v", err)
	}
}

func TestTypedGenerateObject(t *testing.T) {
	f := newFaultServer(t)
	res, err := GenerateObject(context.Background(), GenerateObjectParams{
		Model:  ModelSpec{Provider: ProviderOpenAI, ModelID: "fault:mode=object", BaseURL: String(f.base + "/v1"), APIKey: String("sk-test")},
		Prompt: String("Who?"),
		Schema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer"}}},
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, rawOf(err))
	}
	var who struct {
		Name string
		Age  int
	}
	if err := json.Unmarshal(res.Object, &who); err != nil || who.Name != "Ada" || who.Age != 36 {
		t.Fatalf("object %s (%v)", res.Object, err)
	}
}

func TestTypedStreamWithHostTools(t *testing.T) {
	f := newFaultServer(t)
	inputs := make(chan string, 8) // the Tool runs on a goroutine of its own
	tools := Tools{"weather": func(ctx context.Context, input json.RawMessage) (any, error) {
		inputs <- string(input)
		return "sunny", nil
	}}
	s, err := StreamText(context.Background(), StreamTextParams{
		Model:  ModelSpec{Provider: ProviderOpenAI, ModelID: "fault:mode=tool", BaseURL: String(f.base + "/v1"), APIKey: String("sk-test")},
		Prompt: String("Weather in Paris?"),
		Tools:  map[string]ToolSpec{"weather": {Description: String("The weather in a city.")}},
	}, WithTools(tools))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var types []string
	var result *ToolResultEvent
	for ev := range s.All() {
		switch e := ev.AsAny().(type) {
		case *ToolResultEvent:
			result = e
		case nil:
			t.Fatalf("an unknown event: %s", ev.RawJSON())
		}
		var head struct{ Type string }
		_ = json.Unmarshal(ev.RawJSON(), &head)
		types = append(types, head.Type)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	close(inputs)
	var got []string
	for in := range inputs {
		got = append(got, in)
	}
	if len(got) != 1 || result == nil || string(result.Output) != `"sunny"` || result.ToolName != "weather" {
		t.Fatalf("tool inputs %v, result %+v, events %v", got, result, types)
	}
}

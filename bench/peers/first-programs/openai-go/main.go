package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func params(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
}

func main() {
	ctx := context.Background()
	// the key comes from $OPENAI_API_KEY; https://api.openai.com/v1, or the fault server's
	client := openai.NewClient(option.WithBaseURL(os.Getenv("OPENAI_BASE_URL")))
	res, err := client.Chat.Completions.New(ctx, params("gpt-4o-mini", "Say hello in one word."))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("text: %s (%d tokens)\n", res.Choices[0].Message.Content, res.Usage.TotalTokens)

	s := client.Chat.Completions.NewStreaming(ctx, params("gpt-4o-mini", "Say hello."))
	defer s.Close()
	for s.Next() {
		for _, choice := range s.Current().Choices {
			if choice.Delta.Content != "" {
				fmt.Printf("delta: %s\n", choice.Delta.Content)
			}
			if choice.FinishReason != "" {
				fmt.Printf("finish: %s\n", choice.FinishReason)
			}
		}
	}
	if err := s.Err(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}

	// A 429 with retry-after (the fault server's model id; a real provider's 429 reads the same):
	// retried twice, waiting as told, then the last attempt's error.
	_, err = client.Chat.Completions.New(ctx, params("fault:mode=status;status=429;retry_after_ms=200", "hi"))
	var e *openai.Error
	if errors.As(err, &e) && e.StatusCode == 429 {
		fmt.Printf("rate limited (retry after %sms): %v\n", e.Response.Header.Get("Retry-After-Ms"), err)
	}

	// Nothing listening: the chain ends at the OS error.
	_, err = client.Chat.Completions.New(ctx, params("gpt-4o-mini", "hi"),
		option.WithBaseURL("http://127.0.0.1:1/v1"), option.WithMaxRetries(0))
	if errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Printf("no server: %v\n", err)
	}
}

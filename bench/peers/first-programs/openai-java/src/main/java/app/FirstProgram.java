package app;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.OpenAIException;
import com.openai.errors.RateLimitException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;

public class FirstProgram {
    public static void main(String[] args) {
        String baseUrl = args.length > 0 ? args[0] : "https://api.openai.com/v1";
        OpenAIClient client = OpenAIOkHttpClient.builder().fromEnv().baseUrl(baseUrl).build(); // key: OPENAI_API_KEY
        ChatCompletionCreateParams hello = ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage("Say hello.").build();

        ChatCompletion r = client.chat().completions().create(hello);
        System.out.println("text: " + r.choices().get(0).message().content().orElse("") + " (" + r.choices().get(0).finishReason()
                + ", " + r.usage().map(u -> u.totalTokens()).orElse(0L) + " tokens)");

        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(hello)) {
            s.stream().flatMap(c -> c.choices().stream()).flatMap(c -> c.delta().content().stream()).forEach(System.out::print);
        }
        System.out.println();

        try { // the fault server answers this model id with a 429 and retry-after: 2
            client.withOptions(o -> o.maxRetries(0)).chat().completions()
                    .create(hello.toBuilder().model("fault:mode=status;status=429;retry_after=2").build());
        } catch (RateLimitException e) {
            System.out.println("status " + e.statusCode() + ", retry after " + e.headers().values("retry-after") + " s");
        }

        try { // nothing listens on port 1: the error, down to the OS error
            client.withOptions(o -> o.baseUrl("http://127.0.0.1:1/v1")).chat().completions().create(hello);
        } catch (OpenAIException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                System.out.println("caused by " + t);
            }
        }
    }
}

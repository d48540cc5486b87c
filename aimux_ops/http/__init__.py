"""HTTP to the providers: the transport, deadlines, the AI SDK's retry, record / replay."""

"""What crosses the boundary as JSON: the envelope, cause nodes, redaction, decoding."""
